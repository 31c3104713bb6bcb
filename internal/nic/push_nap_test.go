package nic

import (
	"runtime"
	"testing"
)

// TestTargetLooksWhilePushesPending: a target whose only work is pushed puts
// waiting for their data (two or more: the initiator writes them one after the
// other) keeps looking for their FINs at intervals, napping between looks,
// rather than spinning its idle rounds and then sleeping until a FIN wakes it:
// the initiator then pays no wake-up per FIN, and the target no processor while
// the data moves.
func TestTargetLooksWhilePushesPending(t *testing.T) {
	nis := newNIs(t, 2, NIMatching|NIPhysical)
	init, tgt := nis[0], nis[1]
	// The initiator runs no round: the CTSs stay unanswered. (Its progress
	// goroutine naps while the lock is held, TestProgressGoroutineStepsAside, so
	// the idle rounds counted below are the target's.)
	init.progMu.Lock()
	defer init.progMu.Unlock()
	idx := mustPT(t, tgt, 0, nil)
	mustME(t, tgt, idx, MESpec{Start: make([]byte, 4<<20), UID: UIDAny, Options: MEOpPut,
		MatchID: anyProc(), MatchBits: 1}, PriorityList, 0)
	pr := mustPeer(t, tgt, init)
	tgt.progMu.Lock()
	pushedRequest(t, tgt, pr, idx, 2<<20)
	pushedRequest(t, tgt, pr, idx, 2<<20)
	tgt.progMu.Unlock()
	// A message the target drops wakes its goroutine (it may sleep since the
	// NI started).
	md, err := init.MDBind(MDSpec{Start: make([]byte, 8)})
	if err != nil {
		t.Fatal(err)
	}
	if err := Put(md, 0, 8, NoAckReq, mustPhysID(t, tgt), idx, 2, 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	// One idle spin is progressSpin-1 rounds; then the goroutine would sleep.
	idle := progressIdle.Load()
	for i := 0; progressIdle.Load()-idle < 4*progressSpin; i++ {
		if i == 2e7 {
			t.Fatalf("the target's progress goroutine stopped looking after %d idle rounds, two pushed puts pending",
				progressIdle.Load()-idle)
		}
		runtime.Gosched()
	}
}
