package nic

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"
)

// TestWaitsYieldRarely: CT.Wait, CTPoll, EQ.Wait and EQPoll drive progress in a
// spin before they block; they yield the processor (runtime.Gosched) at most
// once per 1024 rounds. A yield while another processor is idle makes the
// scheduler wake an OS thread to look for work, which on a small host preempts
// the thread that spins or copies on the other core (measured: most of the
// context switches of a two-process put ping-pong).
func TestWaitsYieldRarely(t *testing.T) {
	ni := newNIs(t, 1, NIMatching|NIPhysical)[0]
	ct, err := ni.CTAlloc()
	if err != nil {
		t.Fatal(err)
	}
	q, err := ni.EQAlloc(8)
	if err != nil {
		t.Fatal(err)
	}
	waits := []struct {
		name string
		wait func(context.Context) error
	}{
		{"CT.Wait", func(ctx context.Context) error { _, err := ct.Wait(ctx, 1); return err }},
		{"CTPoll", func(ctx context.Context) error {
			_, _, err := CTPoll(ctx, []*CT{ct}, []uint64{1})
			return err
		}},
		{"EQ.Wait", func(ctx context.Context) error { _, err := q.Wait(ctx); return err }},
		{"EQPoll", func(ctx context.Context) error { _, _, err := EQPoll(ctx, []*EQ{q}); return err }},
	}
	const every = 1024 // rounds per yield, at least
	const rounds = 8 * every
	for _, w := range waits {
		polls, yields := ni.appPolls.Load(), waitYields.Load()
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			// Cancel once the wait ran enough rounds (it spins waitSpin > rounds
			// before it blocks, so it is still spinning or asleep, never done).
			for ni.appPolls.Load() < polls+rounds {
				runtime.Gosched()
			}
			cancel()
		}()
		err := w.wait(ctx)
		cancel()
		if err == nil || errors.Is(err, ArgInvalid) {
			t.Fatalf("%s: %v, want the wait ended by its context", w.name, err)
		}
		n, y := ni.appPolls.Load()-polls, waitYields.Load()-yields
		if n < rounds {
			t.Fatalf("%s returned after %d rounds, before its context ended", w.name, n)
		}
		if y > n/every+1 {
			t.Errorf("%s yielded %d times in %d rounds, want at most one per %d rounds", w.name, y, n, every)
		}
	}
}

// TestProgressGoroutineYieldsRarely: the NI's progress goroutine, spinning before
// it sleeps, yields the processor at most once per 1024 idle rounds, for the
// reason TestWaitsYieldRarely gives.
func TestProgressGoroutineYieldsRarely(t *testing.T) {
	const every = 1024
	idle, yields := progressIdle.Load(), progressYields.Load()
	nis := newNIs(t, 2, NIMatching|NIPhysical)
	// Each NI's goroutine spins progressSpin rounds after it starts (and after
	// every completion) before it sleeps.
	waitFor(t, 20*time.Second, "the progress goroutines' idle spin", func() bool {
		return progressIdle.Load()-idle >= 2*(progressSpin-1)
	})
	for _, ni := range nis {
		if err := ni.Fini(); err != nil {
			t.Fatal(err)
		}
	}
	n, y := progressIdle.Load()-idle, progressYields.Load()-yields
	if y > n/every+uint64(len(nis)) {
		t.Errorf("the progress goroutines yielded %d times in %d idle rounds, want at most one per %d rounds", y, n, every)
	}
}
