package nic

import (
	"context"
	"testing"
	"time"
)

// setWaitSpinTime sets how long a waiting caller keeps polling, for one test.
func setWaitSpinTime(t *testing.T, d time.Duration) {
	old := waitSpinTime
	waitSpinTime = d
	t.Cleanup(func() { waitSpinTime = old })
}

// TestWaitsPollForTheirTime: CT.Wait, CTPoll, EQ.Wait and EQPoll keep driving
// progress for waitSpinTime, however many rounds that takes, before they block:
// a peer that is late by a scheduling slice (a millisecond or so) finds the
// waiter still polling, not asleep behind a wake-up chain. Each call here waits
// for an event that never comes until its context ends; with waitSpinTime far
// beyond that context, the call's rounds keep coming right up to its end.
func TestWaitsPollForTheirTime(t *testing.T) {
	setWaitSpinTime(t, time.Hour)
	ni := newNIs(t, 1, NIMatching|NIPhysical)[0]
	ct, err := ni.CTAlloc()
	if err != nil {
		t.Fatal(err)
	}
	q := mustEQ(t, ni)
	waits := map[string]func(ctx context.Context){
		"CT.Wait": func(ctx context.Context) { ct.Wait(ctx, 1) },
		"CTPoll":  func(ctx context.Context) { CTPoll(ctx, []*CT{ct}, []uint64{1}) },
		"EQ.Wait": func(ctx context.Context) { q.Wait(ctx) },
		"EQPoll":  func(ctx context.Context) { EQPoll(ctx, []*EQ{q}) },
	}
	for name, wait := range waits {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		done := make(chan struct{})
		go func() { defer close(done); wait(ctx) }()
		// Well past the rounds the call ran before this budget (20000: about a
		// millisecond, and under a second on any machine these tests run on).
		time.Sleep(time.Second)
		before := ni.appPolls.Load()
		time.Sleep(150 * time.Millisecond)
		after := ni.appPolls.Load()
		cancel()
		<-done
		if after == before {
			t.Errorf("%s: no progress round in 150 ms, a second into the wait: it blocked", name)
		}
	}
}
