package nic

import (
	"bytes"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// goroutineID returns the calling goroutine's id, read from the header line of its
// stack trace ("goroutine 17 [running]:").
func goroutineID() uint64 {
	var b [64]byte
	n := runtime.Stack(b[:], false)
	f := strings.Fields(string(b[:n]))
	if len(f) < 2 {
		return 0
	}
	id, _ := strconv.ParseUint(f[1], 10, 64)
	return id
}

// goroutineStack returns the stack trace of goroutine id and its wait state (the
// bracketed word of the header, such as "select" or "running"), or "" if there is
// no such goroutine.
func goroutineStack(id uint64) (stack, state string) {
	buf := make([]byte, 64<<10)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	head := []byte("goroutine " + strconv.FormatUint(id, 10) + " [")
	for _, g := range bytes.Split(buf, []byte("\n\n")) {
		if !bytes.HasPrefix(g, head) {
			continue
		}
		state = string(g[len(head):])
		if i := strings.IndexAny(state, ",]"); i >= 0 {
			state = state[:i]
		}
		return string(g), state
	}
	return "", ""
}

// waitParked polls until goroutine id is parked in state (such as "select") with fn
// on its stack, and fails the test if that does not happen within timeout. It is
// how a test knows that a waiter has really blocked before it acts, without
// sleeping for a guessed time.
func waitParked(t *testing.T, id uint64, state, fn string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		stack, st := goroutineStack(id)
		if st == state && strings.Contains(stack, fn) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("goroutine %d not parked (%s) in %s after %v; its stack:\n%s", id, state, fn, timeout, stack)
		}
		time.Sleep(time.Millisecond)
	}
}

// waitFor polls cond until it holds, failing the test with what if it does not
// within timeout.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, timeout)
		}
		time.Sleep(time.Millisecond)
	}
}
