package nic

import (
	"context"
	"testing"
	"time"

	"github.com/goportals/goportals/eq"
)

// TestWaitBlocksSoonWhileLongTransfersOut: a caller waiting while a long put of
// its NI is in flight spins only longSpin rounds before it blocks (its answer is
// a whole transfer away, and a spinning caller takes the CPU the copy needs),
// instead of waitSpin.
func TestWaitBlocksSoonWhileLongTransfersOut(t *testing.T) {
	nis := newNIs(t, 2, NIMatching|NIPhysical)
	ini, tgt := nis[0], nis[1]
	const size = 256 << 10
	idx := mustPT(t, tgt, 0, nil)
	mustME(t, tgt, idx, MESpec{Start: make([]byte, size), UID: UIDAny, Options: MEOpPut, MatchID: anyProc(), MatchBits: 5},
		PriorityList, 0)
	ct, err := ini.CTAlloc()
	if err != nil {
		t.Fatal(err)
	}
	m, err := ini.MDBind(MDSpec{Start: make([]byte, size), CT: ct, Options: MDEventCTAck})
	if err != nil {
		t.Fatal(err)
	}
	hold := newHoldLong(t) // the target keeps the transfer in flight
	if err := Put(m, 0, size, CTAckReq, mustPhysID(t, tgt), idx, 5, 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	hold.wait(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	since := ini.appPolls.Load()
	done := make(chan error, 1)
	go func() {
		v, err := ct.Wait(ctx, 1)
		if err == nil && v.Success != 1 {
			t.Errorf("CT.Wait returned %+v", v)
		}
		done <- err
	}()
	// The waiter is blocked once it registered on the counter (the cell's
	// attention word is set before it sleeps).
	waitFor(t, 20*time.Second, "the waiter blocks on the counter", func() bool {
		return ct.c.Cell().Add(eq.CTEvent{})
	})
	if n := ini.appPolls.Load() - since; n >= waitSpin {
		t.Errorf("the waiter ran %d progress rounds before it blocked, want fewer than %d (longSpin %d)", n, waitSpin, longSpin)
	}
	hold.letGo()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
