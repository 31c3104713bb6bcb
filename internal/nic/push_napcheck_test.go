package nic

import (
	"runtime"
	"testing"
)

// TestPushNapAskedNowAndThen: while a pushed put waits for its FIN but the
// target may not nap (one put: its FIN is the answer to spin for), the progress
// goroutine asks pushNap (which takes the engine lock and walks the target
// operations) once every pushNapAfter idle rounds, not in every idle round
// after the first pushNapAfter, where it would contend for the engine lock with
// the callers all through the spin.
func TestPushNapAskedNowAndThen(t *testing.T) {
	nis := newNIs(t, 2, NIMatching|NIPhysical)
	init, tgt := nis[0], nis[1]
	// The initiator runs no round: the CTS stays unanswered.
	init.progMu.Lock()
	defer init.progMu.Unlock()
	idx := mustPT(t, tgt, 0, nil)
	mustME(t, tgt, idx, MESpec{Start: make([]byte, 4<<20), UID: UIDAny, Options: MEOpPut,
		MatchID: anyProc(), MatchBits: 1}, PriorityList, 0)
	pr := mustPeer(t, tgt, init)
	tgt.progMu.Lock()
	pushedRequest(t, tgt, pr, idx, 2<<20)
	tgt.progMu.Unlock()
	asked := pushNapAsked.Load()
	idle := progressIdle.Load()
	// A message the target drops wakes its goroutine (it may sleep).
	md, err := init.MDBind(MDSpec{Start: make([]byte, 8)})
	if err != nil {
		t.Fatal(err)
	}
	if err := Put(md, 0, 8, NoAckReq, mustPhysID(t, tgt), idx, 2, 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	for i := 0; progressIdle.Load()-idle < progressSpin-1; i++ {
		if i == 2e7 {
			t.Fatal("the target's goroutine spun no whole spin")
		}
		runtime.Gosched()
	}
	spun := progressIdle.Load() - idle
	if n := pushNapAsked.Load() - asked; n > 2*(spun/pushNapAfter+1) {
		t.Fatalf("pushNap asked %d times in %d idle rounds, want about one in %d", n, spun, pushNapAfter)
	}
}
