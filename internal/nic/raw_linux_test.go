package nic

import (
	"errors"
	"math"
	"testing"
	"unsafe"

	"github.com/goportals/goportals/md"
	"golang.org/x/sys/unix"
)

// rawPages maps n pages outside the Go heap and makes page hole (-1: none)
// inaccessible (PROT_NONE: an unmapped page could be mapped again by anyone at
// once, and a test must never write to memory it does not own); they are
// unmapped when the test ends.
func rawPages(t *testing.T, n, hole int) []byte {
	t.Helper()
	p, err := unix.MmapPtr(-1, 0, nil, uintptr(n*4096), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	b := unsafe.Slice((*byte)(p), n*4096)
	if hole >= 0 {
		if err := unix.Mprotect(b[hole*4096:(hole+1)*4096], unix.PROT_NONE); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { unix.MunmapPtr(p, uintptr(n*4096)) })
	return b
}

// A raw list entry with an unmapped page: operations that touch the hole fail
// with NI_SEGV on both sides, the others work, and the process lives.
func TestRawEntryFaultIsSegv(t *testing.T) {
	nis := newNIs(t, 2, NINoMatching|NIPhysical)
	tgt, ini := nis[1], nis[0]
	region := rawPages(t, 3, 1)
	base := uintptr(unsafe.Pointer(&region[0]))
	q := mustEQn(t, tgt, 32)
	if _, err := tgt.PTAlloc(0, q, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := tgt.LEAppend(0, LESpec{Addr: base, Length: 3 * 4096, UID: UIDAny,
		Options: MEOpPut | MEOpGet | MEEventLinkDisable}, PriorityList, 0); err != nil {
		t.Fatal(err)
	}
	iq := mustEQn(t, ini, 32)
	src := make([]byte, 8192)
	fill(src, 5)
	m := mustMD(t, ini, MDSpec{Start: src, EQ: iq, Options: MDEventSendDisable})
	target := tgt.physID()
	for _, tc := range []struct {
		off, n uint64
		fail   NIFail
	}{
		{0, 64, NIOK}, {8192, 64, NIOK}, {4096, 64, NISegv}, {4000, 200, NISegv}, // eager
		{0, 4096, NIOK}, {4096, 4096, NISegv}, // long
	} {
		if err := Put(m, 0, tc.n, AckReqFull, target, 0, 0, tc.off, 0, 0); err != nil {
			t.Fatal(err)
		}
		if ev := waitEvent(t, iq); ev.Type != EventAck || ev.NIFail != tc.fail {
			t.Errorf("put [%d,+%d): ack %+v, want %v", tc.off, tc.n, ev, tc.fail)
		}
		ev := waitEvent(t, q)
		if ev.Type != EventPut || ev.NIFail != tc.fail {
			t.Errorf("put [%d,+%d): target event %+v, want %v", tc.off, tc.n, ev, tc.fail)
		}
		if tc.fail == NIOK && ev.Addr != base+uintptr(tc.off) {
			t.Errorf("put [%d,+%d): event address %#x, want %#x", tc.off, tc.n, ev.Addr, base+uintptr(tc.off))
		}
	}
	if region[8192] != src[0] || region[100] != src[100] {
		t.Errorf("the puts that worked did not land")
	}
}

// A descriptor over all of memory: an unmapped source fails the put with an
// error wrapping md.ErrFault; a reply into an unmapped page is NI_SEGV.
func TestRawDescriptorFaults(t *testing.T) {
	nis := newNIs(t, 2, NIMatching|NIPhysical)
	tgt, ini := nis[1], nis[0]
	q := mustEQn(t, tgt, 32)
	if _, err := tgt.PTAlloc(0, q, 0); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	fill(buf, 9)
	if _, err := tgt.MEAppend(0, MESpec{Start: buf, UID: UIDAny, Options: MEOpPut | MEOpGet | MEEventLinkDisable,
		MatchID: ProcessID{NID: NIDAny, PID: PIDAny}}, PriorityList, 0); err != nil {
		t.Fatal(err)
	}
	iq := mustEQn(t, ini, 32)
	all := mustMD(t, ini, MDSpec{Length: math.MaxUint64, EQ: iq, Options: MDEventSendDisable})
	pages := rawPages(t, 2, 1)
	a := uint64(uintptr(unsafe.Pointer(&pages[0])))
	target := tgt.physID()
	if err := Put(all, a+4096, 64, AckReqFull, target, 0, 0, 0, 0, 0); !errors.Is(err, md.ErrFault) {
		t.Errorf("put from an unmapped page: %v, want md.ErrFault", err)
	}
	if err := Put(all, 0, 8, AckReqFull, target, 0, 0, 0, 0, 0); !errors.Is(err, md.ErrFault) {
		t.Errorf("put from address 0: %v, want md.ErrFault", err)
	}
	if err := Get(all, a+4096, 64, target, 0, 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	if ev := waitEvent(t, iq); ev.Type != EventReply || ev.NIFail != NISegv {
		t.Errorf("reply into an unmapped page: %+v, want NI_SEGV", ev)
	}
	if err := Get(all, a+8, 64, target, 0, 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	if ev := waitEvent(t, iq); ev.Type != EventReply || ev.NIFail != NIOK || pages[8] != buf[0] || pages[71] != buf[63] {
		t.Errorf("get into mapped raw memory: %+v", ev)
	}
	if err := all.Release(); err != nil {
		t.Errorf("release: %v", err)
	}
}
