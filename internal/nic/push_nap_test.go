package nic

import (
	"fmt"
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
	// The initiator runs no round: the CTSs stay unanswered. (Its progress
	// goroutine naps while the lock is held, TestProgressGoroutineStepsAside, so
	// the idle rounds counted below are the target's.)
	init, tgt := silentInitiator(t)
	idx := pushesPending(t, init, tgt, 2)
	// A message the target drops wakes its goroutine (it may sleep since the
	// NI started).
	dropAtTarget(t, init, tgt, idx)
	// One idle spin is progressSpin-1 rounds; then the goroutine would sleep.
	idle := progressIdle.Load()
	waitIdleRounds(t, idle, 4*progressSpin, func() string {
		return fmt.Sprintf("the target's progress goroutine stopped looking after %d idle rounds, two pushed puts pending",
			progressIdle.Load()-idle)
	})
}

// pushesPending gives tgt n pushed puts of 2 MiB from init, into an entry of
// 4 MiB (match bits 1) on a new portal table entry whose index it returns;
// their CTSs are sent and the puts wait for their data.
func pushesPending(t *testing.T, init, tgt *NI, n int) PTIndex {
	t.Helper()
	idx := mustPT(t, tgt, 0, nil)
	mustME(t, tgt, idx, MESpec{Start: make([]byte, 4<<20), UID: UIDAny, Options: MEOpPut,
		MatchID: anyProc(), MatchBits: 1}, PriorityList, 0)
	pr := mustPeer(t, tgt, init)
	tgt.progMu.Lock()
	for i := 0; i < n; i++ {
		pushedRequest(t, tgt, pr, idx, 2<<20)
	}
	tgt.progMu.Unlock()
	return idx
}

// dropAtTarget sends tgt, from init, a short put no entry on idx matches (match
// bits 2): the target drops it, and its arrival wakes the target's progress
// goroutine.
func dropAtTarget(t *testing.T, init, tgt *NI, idx PTIndex) {
	t.Helper()
	md, err := init.MDBind(MDSpec{Start: make([]byte, 8)})
	if err != nil {
		t.Fatal(err)
	}
	if err := Put(md, 0, 8, NoAckReq, mustPhysID(t, tgt), idx, 2, 0, 0, 0); err != nil {
		t.Fatal(err)
	}
}

// waitIdleRounds yields until the progress goroutines ran n idle rounds since
// progressIdle read from; if they have not after 2e7 yields the test fails with
// failed's message.
func waitIdleRounds(t *testing.T, from, n uint64, failed func() string) {
	t.Helper()
	for i := 0; progressIdle.Load()-from < n; i++ {
		if i == 2e7 {
			t.Fatal(failed())
		}
		runtime.Gosched()
	}
}

// silentInitiator makes an initiator and a target NI and holds the initiator's
// progress lock until the test ends: the initiator runs no round.
func silentInitiator(t *testing.T) (init, tgt *NI) {
	t.Helper()
	nis := newNIs(t, 2, NIMatching|NIPhysical)
	init, tgt = nis[0], nis[1]
	init.progMu.Lock()
	t.Cleanup(init.progMu.Unlock)
	return init, tgt
}
