package nic

import (
	"runtime"
	"testing"
)

// TestProgressGoroutineStepsAside: while a caller holds the progress lock (a
// round of its own, such as one that writes a pushed put's data), the NI's
// progress goroutine, woken by a message, naps as it does while callers poll,
// instead of spinning idle rounds beside the caller on a processor the caller's
// peer or the caller itself may need.
func TestProgressGoroutineStepsAside(t *testing.T) {
	nis := newNIs(t, 1, NIMatching|NIPhysical)
	ni := nis[0]
	idx := mustPT(t, ni, 0, nil)
	mustME(t, ni, idx, MESpec{Start: make([]byte, 8), UID: UIDAny, Options: MEOpPut,
		MatchID: anyProc()}, PriorityList, 0)
	md, err := ni.MDBind(MDSpec{Start: make([]byte, 8)})
	if err != nil {
		t.Fatal(err)
	}
	self := mustPhysID(t, ni)
	ni.progMu.Lock()
	held := true
	defer func() {
		if held {
			ni.progMu.Unlock()
		}
	}()
	idle := progressIdle.Load()
	// A message wakes the goroutine (if it sleeps); it finds the lock held.
	if err := Put(md, 0, 8, NoAckReq, self, idx, 0, 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	// kickCh holds one kick: a send succeeds again only once a nap took the
	// last. After the second, the goroutine napped with the lock held, and from
	// then on it spins no idle round while the lock stays held.
	kicks := 0
	var base uint64
	for i := 0; kicks < 4; i++ {
		now := progressIdle.Load()
		if kicks < 2 && now-idle >= progressSpin-1 {
			t.Fatalf("the progress goroutine spun %d idle rounds while a caller held the progress lock", now-idle)
		}
		if kicks >= 2 && now != base {
			t.Fatalf("the progress goroutine spun %d idle rounds after a nap, the progress lock held", now-base)
		}
		if i == 1e8 {
			t.Fatal("the progress goroutine neither spun nor napped")
		}
		select {
		case ni.kickCh <- struct{}{}:
			if kicks++; kicks == 2 {
				base = progressIdle.Load()
			}
		default:
			runtime.Gosched()
		}
	}
	ni.progMu.Unlock()
	held = false
}
