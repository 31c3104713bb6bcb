package rma_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/goportals/goportals/rma"
)

// Every rank exposes 64 bytes and writes a greeting into its right neighbour's.
// Run alone, the process is rank 0 of 1 and greets itself; under
// "go run ./cmd/ptlrun -np 4 prog" each of the four ranks prints its left
// neighbour's greeting.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	mem := make([]byte, 64)
	w, err := rma.Open(ctx, mem) // collective: returns when every rank's memory is exposed
	if err != nil {
		fmt.Println(err)
		return
	}
	defer w.Close(ctx)
	right := (w.Rank() + 1) % w.Size()
	msg := fmt.Appendf(nil, "hello from rank %d", w.Rank())
	if err := w.WriteAt(ctx, right, msg, 0); err != nil { // in place at right on return
		fmt.Println(err)
		return
	}
	if err := w.Barrier(ctx); err != nil { // every rank's write is in place
		fmt.Println(err)
		return
	}
	fmt.Printf("rank %d got %q\n", w.Rank(), mem[:len(msg)])
	// Output: rank 0 got "hello from rank 0"
}

// A shared counter on rank 0: every rank takes tickets with FetchAdd; each
// ticket is handed out once.
func ExampleFetchAdd() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w, err := rma.Open(ctx, make([]byte, 8))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer w.Close(ctx)
	for range 3 {
		ticket, err := rma.FetchAdd(ctx, w, 0, 0, uint64(1))
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println("ticket", ticket)
	}
	// Output:
	// ticket 0
	// ticket 1
	// ticket 2
}

// A lock word on rank 0 taken with CompareAndSwap and given back with Swap.
func ExampleCompareAndSwap() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w, err := rma.Open(ctx, make([]byte, 8))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer w.Close(ctx)
	me := int64(w.Rank() + 1)
	for {
		prev, err := rma.CompareAndSwap(ctx, w, 0, 0, int64(0), me)
		if err != nil {
			fmt.Println(err)
			return
		}
		if prev == 0 {
			break // the lock is ours
		}
	}
	fmt.Println("locked")
	if _, err := rma.Swap(ctx, w, 0, 0, int64(0)); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("unlocked")
	// Output:
	// locked
	// unlocked
}

// Non-blocking puts, completed together by Flush: the buffers stay untouched until
// Flush returns.
func ExampleWindow_Put() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	mem := make([]byte, 8*16)
	w, err := rma.Open(ctx, mem)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer w.Close(ctx)
	vals := make([]byte, 8*16)
	for i := range 16 {
		v := vals[8*i : 8*i+8]
		binary.LittleEndian.PutUint64(v, uint64(i*i))
		if err := w.Put(0, v, int64(8*i)); err != nil {
			fmt.Println(err)
			return
		}
	}
	if err := w.Flush(ctx); err != nil { // all 16 puts are complete at rank 0
		fmt.Println(err)
		return
	}
	if err := w.Barrier(ctx); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(binary.LittleEndian.Uint64(mem[8*15:]))
	// Output: 225
}

// Errors are values: a bad rank or offset is refused before anything is sent.
func ExampleError() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w, err := rma.Open(ctx, make([]byte, 16))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer w.Close(ctx)
	err = w.WriteAt(ctx, 0, make([]byte, 8), 12)
	var e *rma.Error
	fmt.Println(errors.Is(err, rma.ErrOutOfRange), errors.As(err, &e) && e.Rank == 0)
	fmt.Println(err)
	err = w.ReadAt(ctx, w.Size(), make([]byte, 8), 0)
	fmt.Println(errors.Is(err, rma.ErrBadRank))
	// Output:
	// true true
	// rma: WriteAt rank 0 [12, 20): PTL_ARG_INVALID: outside the window
	// true
}
