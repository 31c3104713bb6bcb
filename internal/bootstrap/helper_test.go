package bootstrap

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// helperEnv switches the test binary into a rank helper run through Launch.
const helperEnv = "PTL_BOOTSTRAP_TEST_HELPER"

// exitPeerLost is what a helper exits with when a collective saw ErrPeerLost.
const exitPeerLost = 42

// runHelper is the body of a rank started by the multi-process tests.
func runHelper(mode string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b, err := Open(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, "open:", err)
		return 10
	}
	r, n := b.Rank(), b.Size()
	collectiveFailed := func(err error) int {
		fmt.Fprintf(os.Stderr, "rank %d: %v\n", r, err)
		if errors.Is(err, ErrPeerLost) || errors.Is(err, ErrAborted) {
			return exitPeerLost
		}
		return 11
	}
	switch mode {
	case "kv":
		if err := b.Put("addr", []byte(fmt.Sprintf("rank-%d-of-%d", r, n))); err != nil {
			return collectiveFailed(err)
		}
		if err := b.Fence(ctx); err != nil {
			return collectiveFailed(err)
		}
		for q := range n {
			v, err := b.Get(ctx, q, "addr")
			if err != nil {
				return collectiveFailed(err)
			}
			if want := fmt.Sprintf("rank-%d-of-%d", q, n); string(v) != want {
				fmt.Fprintf(os.Stderr, "rank %d: got %q from %d, want %q\n", r, v, q, want)
				return 12
			}
		}
		if err := b.Barrier(ctx); err != nil {
			return collectiveFailed(err)
		}
		fmt.Printf("rank %d of %d ok\n", r, n)
	case "fail":
		if r == 1 {
			return 3
		}
		if err := b.Barrier(ctx); err != nil {
			return collectiveFailed(err)
		}
	case "fail-after-close":
		// The failing rank leaves the bootstrap cleanly first (as a deferred
		// Close would), so the others see ErrPeerLost and may be reaped first.
		if r == 1 {
			b.Close()
			return 3
		}
		if err := b.Barrier(ctx); err != nil {
			return collectiveFailed(err)
		}
	case "abort":
		if r == n-1 {
			b.Abort(5, "helper gives up")
			time.Sleep(time.Minute) // the launcher kills us
			return 0
		}
		if err := b.Barrier(ctx); err != nil {
			return collectiveFailed(err)
		}
	case "hang":
		if r == 0 {
			signal.Ignore(syscall.SIGTERM) // only SIGKILL ends it
		}
		fmt.Println("hanging")
		time.Sleep(time.Minute)
	case "print":
		// Many writes per line, in pieces, on both streams.
		for i := range 50 {
			fmt.Printf("line %d ", i)
			fmt.Printf("of rank %d", r)
			fmt.Print("\n")
			fmt.Fprintf(os.Stderr, "err %d of rank %d\n", i, r)
		}
		fmt.Printf("tail of rank %d", r) // no newline
	case "exit1", "panic", "race":
		// Rank 1 misbehaves for the check of the harness; the others end cleanly.
		if r == 1 {
			switch mode {
			case "exit1":
				fmt.Fprintln(os.Stderr, "rank 1 fails on purpose")
				return 1
			case "panic":
				panic("rank 1 panics on purpose")
			case "race":
				race()
			}
		}
	case "signal":
		fmt.Println("ready")
		time.Sleep(time.Minute)
	default:
		fmt.Fprintln(os.Stderr, "unknown helper mode", mode)
		return 2
	}
	if err := b.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "close:", err)
		return 13
	}
	return 0
}

// raced is written by two goroutines with no ordering between them.
var raced int

// race makes a data race that the race detector reports every time.
func race() {
	done := make(chan struct{})
	go func() {
		raced = 1
		close(done)
	}()
	raced = 2
	<-done
}
