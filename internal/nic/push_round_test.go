package nic

import (
	"bytes"
	"testing"

	"github.com/goportals/goportals/internal/verbs"
)

// TestPushedWritesShareARound: CTSs waiting at the initiator are all answered
// (their data written, their FINs sent) in the progress round that finds them,
// and the writes post no completion of their own: a window of pushed puts costs
// the initiator one round per batch of CTSs, not a round and a completion per put.
func TestPushedWritesShareARound(t *testing.T) {
	// No progress goroutines: the test decides which side runs a round, and when.
	testNoHelpers.Store(true)
	t.Cleanup(func() { testNoHelpers.Store(false) })
	setPushPuts(t, true)
	nis := newNIs(t, 2, NIMatching|NIPhysical)
	init, tgt := nis[0], nis[1]
	idx := mustPT(t, tgt, 0, nil)
	const size, n = 128 << 10, 3
	dst := make([]byte, n*size)
	mustME(t, tgt, idx, MESpec{Start: dst, UID: UIDAny, Options: MEOpPut | MEManageLocal,
		MatchID: anyProc(), MatchBits: 1}, PriorityList, 0)
	src := make([]byte, n*size)
	fill(src, 9)
	md, err := init.MDBind(MDSpec{Start: src, EQ: mustEQ(t, init)})
	if err != nil {
		t.Fatal(err)
	}
	id := mustPhysID(t, tgt)
	for i := 0; i < n; i++ {
		if err := Put(md, uint64(i*size), size, AckReqFull, id, idx, 1, 0, 0, 0); err != nil {
			t.Fatal(err)
		}
	}
	// The target matches the three and sends their CTSs.
	ctsSent := func() int {
		tgt.mu.Lock()
		defer tgt.mu.Unlock()
		k := 0
		for _, top := range tgt.tops {
			if top.push && top.cts == nil {
				k++
			}
		}
		return k
	}
	for i := 0; ctsSent() < n; i++ {
		if i == 1e7 {
			t.Fatalf("the target sent %d CTSs, want %d", ctsSent(), n)
		}
		tgt.progressOnce(true)
	}
	// The first initiator round that writes writes all three.
	before := init.Pushes()
	for i := 0; init.Pushes() == before; i++ {
		if i == 1e7 {
			t.Fatal("the initiator wrote nothing")
		}
		init.progressOnce(true)
	}
	if got := init.Pushes() - before; got != n {
		t.Fatalf("one round wrote %d of %d pushed puts", got, n)
	}
	var wcs [16]verbs.WorkCompletion
	k, err := init.cq.Poll(wcs[:])
	if err != nil {
		t.Fatal(err)
	}
	for _, wc := range wcs[:k] {
		if wc.ID&widMask == widSend && wc.Opcode == verbs.OpcodeOf(verbs.OpRDMAWrite) {
			t.Fatalf("a pushed write posted completion %+v", wc)
		}
	}
	// (A provider that moves the data after the post, over TCP, needs the
	// target's rounds to place it; the FINs come behind it.)
	for i := 0; ctsSent() > 0; i++ {
		if i == 1e7 {
			t.Fatalf("%d pushed puts still wait for their FINs", ctsSent())
		}
		tgt.progressOnce(true)
		init.progressOnce(true)
	}
	if !bytes.Equal(dst, src) {
		t.Fatal("the entry does not hold the puts' data")
	}
}
