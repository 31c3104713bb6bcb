package nic

import (
	"testing"

	"github.com/goportals/goportals/driverhooks"
)

// CacheStats reach the pin cache through the NI: a long put registers (a miss), the
// same put again reuses the registration (a hit), and the notifier in use and the
// process's locked memory are reported.
func TestNICacheStats(t *testing.T) {
	const size = 64 << 10 // long: its data moves by RDMA (pushed or pulled), so the initiator registers it
	nis := newNIs(t, 2, NIMatching|NIPhysical)
	init, tgt := nis[0], nis[1]
	_, tq, _ := target(t, tgt, size)
	iq, _ := init.EQAlloc(64)
	src := make([]byte, size)
	m, err := init.MDBind(MDSpec{Start: src, EQ: iq})
	if err != nil {
		t.Fatal(err)
	}
	dst, _ := tgt.PhysID()
	for i := 0; i < 2; i++ {
		if err := Put(m, 0, size, AckReqFull, dst, 4, 0x42, 0, 0, 0); err != nil {
			t.Fatal(err)
		}
		waitEvent(t, tq)
		for got := 0; got < 2; got++ { // SEND and ACK
			waitEvent(t, iq)
		}
	}
	s := init.CacheStats()
	n := driverhooks.Default()
	if s.Misses == 0 || s.Hits == 0 || s.Entries == 0 || s.PinnedBytes < size {
		t.Errorf("counters after two puts of one buffer: %+v", s)
	}
	if s.Notifier != n.Kind() || s.Guarantee != n.Guarantee() || s.Guarantee == "" {
		t.Errorf("notifier %q (%q), want %q (%q)", s.Notifier, s.Guarantee, n.Kind(), n.Guarantee())
	}
	if s.MaxBytes == 0 || s.StaleHits != 0 {
		t.Errorf("stats %+v", s)
	}
	if s.Locked.Total() < s.PinnedBytes {
		t.Errorf("the process reports %+v locked, less than the %d bytes the cache pins", s.Locked, s.PinnedBytes)
	}
	if err := init.Fini(); err != nil {
		t.Fatal(err)
	}
	if s := init.CacheStats(); s.Notifier != n.Kind() {
		t.Errorf("after Fini: %+v", s)
	}
}
