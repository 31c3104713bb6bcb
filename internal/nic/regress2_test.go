package nic

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"
)

// two ranks flood each other with gets; both progress goroutines answer and
// may block in peer.send on a full send queue while nobody reposts receives.
func TestRegressionCrossFloodGets(t *testing.T) {
	nis := newNIs(t, 2, NIMatching|NIPhysical)
	const n = 4000
	cts := make([]*CT, 2)
	mds := make([]*MD, 2)
	dsts := make([]ProcessID, 2)
	for r, ni := range nis {
		q, err := ni.EQAlloc(8)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ni.PTAlloc(0, q, 4); err != nil {
			t.Fatal(err)
		}
		if _, err := ni.MEAppend(4, MESpec{Start: make([]byte, 64), UID: UIDAny, Options: MEOpPut | MEOpGet | MEEventLinkDisable | MEEventSuccessDisable,
			MatchID: ProcessID{NID: NIDAny, PID: PIDAny}, MatchBits: 1}, PriorityList, 0); err != nil {
			t.Fatal(err)
		}
		if cts[r], err = ni.CTAlloc(); err != nil {
			t.Fatal(err)
		}
		if mds[r], err = ni.MDBind(MDSpec{Start: make([]byte, 64), CT: cts[r], Options: MDEventCTReply}); err != nil {
			t.Fatal(err)
		}
		if dsts[1-r], err = ni.PhysID(); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for r := range nis {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < n; i++ {
				if err := Get(mds[r], 0, 8, dsts[r], 4, 1, 0, 0); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		b := make([]byte, 1<<20)
		b = b[:runtime.Stack(b, true)]
		t.Fatalf("issuing gets hung; goroutines:\n%s", b)
	}
	for r := range nis {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		v, err := cts[r].Wait(ctx, n)
		cancel()
		if err != nil || v.Success != n || v.Failure != 0 {
			t.Fatalf("rank %d: %+v %v", r, v, err)
		}
	}
}

// Fini while another goroutine is blocked in EQ.Wait on one of the NI's queues:
// Fini returns, and the waiter returns INTERRUPTED (PtlEQWait: the wait ended
// because PtlEQFree or PtlNIFini released the queue), not at its own deadline.
func TestRegressionFiniDuringWait(t *testing.T) {
	nis := newNIs(t, 2, NIMatching|NIPhysical)
	ni := nis[0]
	q, err := ni.EQAlloc(8)
	if err != nil {
		t.Fatal(err)
	}
	id := make(chan uint64, 1)
	res := make(chan error, 1)
	go func() {
		id <- goroutineID()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_, err := q.Wait(ctx)
		res <- err
	}()
	// Past its progress-driving spin, EQ.Wait parks in the queue's select.
	waitParked(t, <-id, "select", "eq.pollQueues", 20*time.Second)
	select {
	case err := <-res:
		t.Fatalf("the waiter returned before Fini: %v", err)
	default:
	}
	finied := make(chan error, 1)
	go func() { finied <- ni.Fini() }()
	select {
	case err := <-finied:
		if err != nil {
			t.Fatalf("Fini: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Fini hung while a goroutine waited on one of the NI's event queues")
	}
	select {
	case err := <-res:
		if !errors.Is(err, Interrupted) {
			t.Fatalf("the waiter returned %v, want INTERRUPTED", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter still blocks 10 s after Fini returned: Fini left its event queue live (want INTERRUPTED at once)")
	}
}

// Fini while another goroutine drives the NI's progress from EQ.Wait (its spin
// before it blocks): the waiter polls a completion queue that Fini tears down,
// which must neither crash, race nor deadlock, and its wait ends with the queue:
// INTERRUPTED, or ARG_INVALID for a wait it starts once the queue is gone.
func TestRegressionFiniWhileWaiterDrivesProgress(t *testing.T) {
	nis := newNIs(t, 2, NIMatching|NIPhysical)
	ni := nis[0]
	q, err := ni.EQAlloc(8)
	if err != nil {
		t.Fatal(err)
	}
	res := make(chan error, 1)
	go func() {
		for {
			// Short waits stay in the spin that drives progress.
			ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
			_, err := q.Wait(ctx)
			cancel()
			if !errors.Is(err, EQEmpty) {
				res <- err
				return
			}
		}
	}()
	before := ni.appPolls.Load()
	waitFor(t, 20*time.Second, "the waiter drives progress before Fini", func() bool {
		return ni.appPolls.Load() > before+100
	})
	select {
	case err := <-res:
		t.Fatalf("the waiter returned before Fini: %v", err)
	default:
	}
	if err := ni.Fini(); err != nil {
		t.Fatalf("Fini: %v", err)
	}
	select {
	case err := <-res:
		if !errors.Is(err, Interrupted) && !errors.Is(err, ArgInvalid) {
			t.Fatalf("the waiter returned %v after Fini, want INTERRUPTED or ARG_INVALID", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter still waits 10 s after Fini returned: Fini left its event queue live")
	}
}
