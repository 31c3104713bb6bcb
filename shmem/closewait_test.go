package shmem

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// TestWaitSpinsThroughClose: a wait still inside its spinning budget (it
// drives the engine on the heap's target counter) while another goroutine
// closes the World returns ErrClosed, as a napping one does; it neither reads
// the freed counter's handle unsynchronized nor reports the freed counter's
// error.
func TestWaitSpinsThroughClose(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w, err := Init(ctx, &Options{HeapSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	flag, err := Calloc[uint64](ctx, w, 1)
	if err != nil {
		t.Fatal(err)
	}
	w.spinFor = time.Hour // never nap
	var rounds atomic.Uint64
	w.onRound = func() { rounds.Add(1) }
	res := make(chan error, 1)
	go func() { res <- WaitUntil(ctx, flag, CmpEQ, 1) }()
	for rounds.Load() < 2 {
		time.Sleep(time.Millisecond)
	}
	cerr := w.Close(ctx)
	werr := <-res
	if cerr != nil {
		t.Fatal(cerr)
	}
	if !errors.Is(werr, ErrClosed) {
		t.Fatalf("a spinning wait through Close returned %v, want ErrClosed", werr)
	}
}

// TestCloseWaitsForLook: Close does not free the heap while a wait is looking
// at it. The wait's look (its done function) starts, then another goroutine
// calls Close; Close must not return (the heap is unmapped when it does)
// before the look ended. A look that finds Close returned reports it instead
// of reading the unmapped heap.
func TestCloseWaitsForLook(t *testing.T) {
	for _, spin := range []time.Duration{0, time.Hour} {
		t.Run(map[bool]string{true: "napping", false: "spinning"}[spin == 0], func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			w, err := Init(ctx, &Options{HeapSize: 1 << 20})
			if err != nil {
				t.Fatal(err)
			}
			flag, err := Calloc[uint64](ctx, w, 1)
			if err != nil {
				t.Fatal(err)
			}
			w.spinFor = spin
			inLook := make(chan struct{})
			closing := make(chan struct{})
			closed := make(chan error, 1)
			var lookedAfterClose atomic.Bool
			var once atomic.Bool
			res := make(chan error, 1)
			go func() {
				res <- w.waitFor(ctx, func() bool {
					if once.CompareAndSwap(false, true) {
						close(inLook)
						<-closing
						// Give a Close that does not wait for this look
						// time to return; a Close that waits cannot.
						select {
						case err := <-closed:
							closed <- err
							lookedAfterClose.Store(true)
							return true // do not touch the unmapped heap
						case <-time.After(100 * time.Millisecond):
						}
					}
					return load(flag, 0) == 1
				})
			}()
			<-inLook
			go func() { close(closing); closed <- w.Close(ctx) }()
			werr := <-res
			cerr := <-closed
			if cerr != nil {
				t.Fatal(cerr)
			}
			if lookedAfterClose.Load() {
				t.Fatal("Close returned (and freed the heap) while a wait was looking at the heap")
			}
			if !errors.Is(werr, ErrClosed) {
				t.Fatalf("a wait through Close returned %v, want ErrClosed", werr)
			}
		})
	}
}
