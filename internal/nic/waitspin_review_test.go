package nic

import (
	"context"
	"errors"
	"testing"
	"time"
)

// reviewWait is one of the four waiting calls, on a counter or queue of its
// own that nothing ever reaches, with the release of that counter or queue.
type reviewWait struct {
	name string
	wait func(context.Context) error
	free func() error
}

var reviewWaitNames = []string{"CT.Wait", "CTPoll", "EQ.Wait", "EQPoll"}

func newReviewWait(t *testing.T, ni *NI, name string) reviewWait {
	t.Helper()
	switch name {
	case "CT.Wait", "CTPoll":
		ct, err := ni.CTAlloc()
		if err != nil {
			t.Fatal(err)
		}
		if name == "CT.Wait" {
			return reviewWait{name, func(ctx context.Context) error { _, err := ct.Wait(ctx, 1); return err }, ct.Free}
		}
		return reviewWait{name, func(ctx context.Context) error {
			_, _, err := CTPoll(ctx, []*CT{ct}, []uint64{1})
			return err
		}, ct.Free}
	}
	q := mustEQ(t, ni)
	if name == "EQ.Wait" {
		return reviewWait{name, func(ctx context.Context) error { _, err := q.Wait(ctx); return err }, q.Free}
	}
	return reviewWait{name, func(ctx context.Context) error { _, _, err := EQPoll(ctx, []*EQ{q}); return err }, q.Free}
}

// spinWait starts w's call with ctx and returns, with the channel its error
// comes on, once ni has run rounds more progress rounds for it.
func spinWait(t *testing.T, ni *NI, w reviewWait, ctx context.Context, rounds uint64, what string) chan error {
	t.Helper()
	start := ni.appPolls.Load()
	done := make(chan error, 1)
	go func() { done <- w.wait(ctx) }()
	waitFor(t, time.Minute, w.name+" "+what, func() bool { return ni.appPolls.Load()-start >= rounds })
	return done
}

// TestReviewWaitsSpinPastRoundBudget: with a time budget that does not end,
// each waiting call runs well past waitSpin rounds (counted, not timed: however
// slow the host or the race detector makes a round, a call that stopped at
// waitSpin rounds never gets there).
func TestReviewWaitsSpinPastRoundBudget(t *testing.T) {
	setWaitSpinTime(t, time.Hour)
	ni := newNIs(t, 1, NIMatching|NIPhysical)[0]
	for _, name := range reviewWaitNames {
		w := newReviewWait(t, ni, name)
		ctx, cancel := context.WithCancel(context.Background())
		done := spinWait(t, ni, w, ctx, 3*waitSpin, "running 3*waitSpin rounds")
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("%s: %v, want the wait ended by its context", w.name, err)
		}
	}
}

// TestReviewCancelEndsSpinPromptly: a context cancelled while a call spins in
// its time budget ends the call within a few dozen rounds (it looks at the
// context every 64), not at the end of the budget.
func TestReviewCancelEndsSpinPromptly(t *testing.T) {
	setWaitSpinTime(t, time.Hour)
	ni := newNIs(t, 1, NIMatching|NIPhysical)[0]
	for _, name := range reviewWaitNames {
		w := newReviewWait(t, ni, name)
		ctx, cancel := context.WithCancel(context.Background())
		done := spinWait(t, ni, w, ctx, waitSpin+1025, "spinning past waitSpin")
		cancel()
		at := ni.appPolls.Load()
		err := <-done
		if n := ni.appPolls.Load() - at; n > 2*64 {
			t.Errorf("%s ran %d rounds after its context was cancelled", w.name, n)
		}
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("%s: %v, want the wait ended by its context", w.name, err)
		}
	}
}

// TestReviewFreeEndsSpinPromptly: freeing the counter or queue a call waits on,
// while it spins in its time budget, ends the call Interrupted within a couple
// of its periodic checks (every round for a queue, every 1024 rounds for a
// counter), and so does the NI's Fini.
func TestReviewFreeEndsSpinPromptly(t *testing.T) {
	setWaitSpinTime(t, time.Hour)
	for _, fini := range []bool{false, true} {
		for _, name := range reviewWaitNames {
			ni := newNIs(t, 1, NIMatching|NIPhysical)[0]
			w := newReviewWait(t, ni, name)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			done := spinWait(t, ni, w, ctx, waitSpin+1025, "spinning past waitSpin")
			var err error
			if fini {
				err = ni.Fini()
			} else {
				err = w.free()
			}
			if err != nil {
				t.Fatal(err)
			}
			at := ni.appPolls.Load()
			err = <-done
			cancel()
			if n := ni.appPolls.Load() - at; n > 2*1024+64 {
				t.Errorf("%s (Fini %v) ran %d rounds after the free", w.name, fini, n)
			}
			if !errors.Is(err, Interrupted) {
				t.Fatalf("%s (Fini %v): %v, want Interrupted", w.name, fini, err)
			}
		}
	}
}

// TestReviewPollsInterruptedByFiniWhileSpinning: PtlNIFini while CTPoll or
// EQPoll drives progress (the spin before they block) ends them INTERRUPTED, as
// it ends CT.Wait and EQ.Wait: the counter or queue was live when the call began.
// The spin stops when it sees the NI dead and the call then blocks on its
// counters or queues; Fini may have released them by then, which must not make
// the call's error ARG_INVALID (the error of a call made on a released object).
// Fini races with the call's last steps, hence the repetitions.
func TestReviewPollsInterruptedByFiniWhileSpinning(t *testing.T) {
	setWaitSpinTime(t, time.Hour)
	bad := map[string]int{}
	for rep := 0; rep < 40; rep++ {
		for _, name := range []string{"CTPoll", "EQPoll"} {
			ni := newNIs(t, 1, NIMatching|NIPhysical)[0]
			w := newReviewWait(t, ni, name)
			start := ni.appPolls.Load()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			done := make(chan error, 1)
			go func() { done <- w.wait(ctx) }()
			waitFor(t, time.Minute, name+" spinning", func() bool { return ni.appPolls.Load()-start > 64 })
			if err := ni.Fini(); err != nil {
				t.Fatal(err)
			}
			err := <-done
			cancel()
			if !errors.Is(err, Interrupted) {
				if bad[name]++; bad[name] == 1 {
					t.Errorf("%s, the NI finalized during its spin: %v, want Interrupted", name, err)
				}
			}
		}
	}
	if len(bad) > 0 {
		t.Errorf("calls not Interrupted, of 40 each: %v", bad)
	}
}
