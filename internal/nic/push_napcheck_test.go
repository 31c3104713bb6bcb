package nic

import (
	"testing"
)

// TestPushNapAskedNowAndThen: while a pushed put waits for its FIN but the
// target may not nap (one put: its FIN is the answer to spin for), the progress
// goroutine asks pushNap (which takes the engine lock and walks the target
// operations) once every pushNapAfter idle rounds, not in every idle round
// after the first pushNapAfter, where it would contend for the engine lock with
// the callers all through the spin.
func TestPushNapAskedNowAndThen(t *testing.T) {
	// The initiator runs no round: the CTS stays unanswered.
	init, tgt := silentInitiator(t)
	idx := pushesPending(t, init, tgt, 1)
	asked := pushNapAsked.Load()
	idle := progressIdle.Load()
	// A message the target drops wakes its goroutine (it may sleep).
	dropAtTarget(t, init, tgt, idx)
	waitIdleRounds(t, idle, progressSpin-1, func() string { return "the target's goroutine spun no whole spin" })
	spun := progressIdle.Load() - idle
	if n := pushNapAsked.Load() - asked; n > 2*(spun/pushNapAfter+1) {
		t.Fatalf("pushNap asked %d times in %d idle rounds, want about one in %d", n, spun, pushNapAfter)
	}
}
