package nic

import (
	"context"
	"testing"
	"time"

	"github.com/goportals/goportals/eq"
)

// Helpers of the rules_atomic_* tests: two ranks of one job in this process (the
// soft provider), with the limits a test asks for.

// newNIsWith is newNIs with desired limits (nil: the maximum).
func newNIsWith(t testing.TB, n int, opts NIOptions, desired *Limits) []*NI {
	t.Helper()
	nis, _ := rulesJob(t, n, opts, PIDAny, desired)
	return nis
}

// ruleTarget exposes mem (or, when iov is not nil, the iovec list) on portal index
// 4 of ni with match bits 0x42, and returns the index's event queue and the entry's
// counter (which counts events).
func ruleTarget(t testing.TB, ni *NI, mem []byte, iov [][]byte) (*EQ, *CT) {
	t.Helper()
	q, err := ni.EQAlloc(256)
	if err != nil {
		t.Fatal(err)
	}
	ct, err := ni.CTAlloc()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ni.PTAlloc(0, q, 4); err != nil {
		t.Fatal(err)
	}
	if _, err := ni.MEAppend(4, MESpec{Start: mem, Iovecs: iov, CT: ct, UID: UIDAny,
		Options: MEOpPut | MEOpGet | MEEventCTComm | MEEventLinkDisable,
		MatchID: ProcessID{NID: NIDAny, PID: PIDAny}, MatchBits: 0x42}, PriorityList, 7); err != nil {
		t.Fatal(err)
	}
	return q, ct
}

// waitKind waits for the next event of q and checks its type.
func waitKind(t testing.TB, q *EQ, want eq.EventKind) Event {
	t.Helper()
	ev := waitEvent(t, q)
	if ev.Type != want {
		t.Fatalf("event %v (%+v), want %v", ev.Type, ev, want)
	}
	return ev
}

// waitCT waits until c has counted at least n and returns its value.
func waitCT(t testing.TB, c *CT, n uint64) CTEvent {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	v, err := c.Wait(ctx, n)
	if err != nil {
		t.Fatalf("waiting for the counter to reach %d: %v", n, err)
	}
	return v
}

// noEvent checks that q holds no further event.
func noEvent(t testing.TB, q *EQ) {
	t.Helper()
	if ev, err := q.Get(); err == nil {
		t.Errorf("unexpected event %+v", ev)
	}
}
