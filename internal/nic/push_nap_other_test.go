package nic

import (
	"testing"
)

// TestPushNapOnlyWhenPushesAreAllTheWork: the target naps between looks for its
// pushed puts' FINs only while they are all it waits for. An operation of its
// own that waits for its answer (a get it issued, a put of its own that may get
// a CTS to answer), or sends queued for room that frees without a completion,
// need the goroutine looking, not asleep for up to pushNapMax per look.
func TestPushNapOnlyWhenPushesAreAllTheWork(t *testing.T) {
	// No progress goroutines: the test asks pushNap itself, and the initiator
	// never answers.
	noHelpers(t)
	nis := newNIs(t, 2, NIMatching|NIPhysical)
	init, tgt := nis[0], nis[1]
	pushesPending(t, init, tgt, 2)
	if d := tgt.pushNap(); d == 0 {
		t.Fatal("no nap with two pushed puts as the only work") // (the case the nap is for)
	}

	tgt.queued.Add(1)
	d := tgt.pushNap()
	tgt.queued.Add(-1)
	if d != 0 {
		t.Fatalf("a nap of %v with a send queued for room", d)
	}

	// A get of the target's own, to a peer that does not answer.
	iidx := mustPT(t, init, 0, nil)
	md, err := tgt.MDBind(MDSpec{Start: make([]byte, 8)})
	if err != nil {
		t.Fatal(err)
	}
	if err := Get(md, 0, 8, mustPhysID(t, init), iidx, 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	if d := tgt.pushNap(); d != 0 {
		t.Fatalf("a nap of %v with a get of its own waiting for its reply", d)
	}
}
