package rma_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/goportals/goportals/internal/bootstrap"
	"github.com/goportals/goportals/portals"
	"github.com/goportals/goportals/rma"
)

// alone clears the launcher's variables, so the test process is rank 0 of 1.
func alone(t *testing.T) context.Context {
	t.Helper()
	if os.Getenv(bootstrap.EnvAddr) != "" {
		t.Skip("running under a launcher: these tests are for a process alone")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// TestAlone: a process started without a launcher is rank 0 of 1, and every call
// works on its own memory.
func TestAlone(t *testing.T) {
	ctx := alone(t)
	mem := make([]byte, 1<<20+100)
	w, err := rma.Open(ctx, mem)
	if err != nil {
		t.Fatal(err)
	}
	if w.Rank() != 0 || w.Size() != 1 || w.Len(0) != len(mem) || w.Len(1) != 0 || &w.Bytes()[0] != &mem[0] {
		t.Fatalf("rank %d size %d len %d/%d", w.Rank(), w.Size(), w.Len(0), w.Len(1))
	}
	big := make([]byte, 1<<20)
	for i := range big {
		big[i] = byte(i*7 + i>>10)
	}
	if err := w.WriteAt(ctx, 0, big, 100); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(mem[100:], big) || !bytes.Equal(mem[:100], make([]byte, 100)) {
		t.Fatal("WriteAt to itself: memory differs")
	}
	back := make([]byte, len(big))
	if err := w.ReadAt(ctx, 0, back, 100); err != nil || !bytes.Equal(back, big) {
		t.Fatalf("ReadAt: %v, equal %v", err, bytes.Equal(back, big))
	}
	if err := w.Put(0, []byte("tail"), int64(len(mem)-4)); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(ctx); err != nil || string(mem[len(mem)-4:]) != "tail" {
		t.Fatalf("Put+Flush: %v, %q", err, mem[len(mem)-4:])
	}
	if err := w.Flush(ctx); err != nil {
		t.Fatalf("a Flush with nothing to flush: %v", err)
	}
	if old, err := rma.FetchAdd(ctx, w, 0, 8, uint32(3)); err != nil || old != 0 || mem[8] != 3 {
		t.Fatalf("FetchAdd to itself: old %d, %v; the word is now %d, want 3", old, err, mem[8])
	}
	n, err := w.Arrivals()
	if err != nil || n != 4 { // WriteAt, ReadAt, Put, FetchAdd
		t.Fatalf("Arrivals = %d, %v; want 4", n, err)
	}
	if err := w.WaitArrivals(ctx, 4); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel()
	if err := w.WaitArrivals(short, 5); err == nil {
		t.Fatal("WaitArrivals for an arrival that never comes returned nil")
	}
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(ctx); !errors.Is(err, rma.ErrClosed) || !errors.Is(err, portals.ArgInvalid) {
		t.Fatalf("Flush after Close: %v", err)
	}
	if _, err := w.Arrivals(); !errors.Is(err, rma.ErrClosed) {
		t.Fatalf("Arrivals after Close: %v", err)
	}
}

// TestNilWindow: calls on a nil window are errors, not panics.
func TestNilWindow(t *testing.T) {
	ctx := context.Background()
	var w *rma.Window
	for what, err := range map[string]error{
		"WriteAt":      w.WriteAt(ctx, 0, []byte{1}, 0),
		"ReadAt":       w.ReadAt(ctx, 0, []byte{1}, 0),
		"Put":          w.Put(0, []byte{1}, 0),
		"Flush":        w.Flush(ctx),
		"Barrier":      w.Barrier(ctx),
		"Close":        w.Close(ctx),
		"WaitArrivals": w.WaitArrivals(ctx, 1),
	} {
		if !errors.Is(err, rma.ErrClosed) {
			t.Errorf("%s on a nil window: %v", what, err)
		}
	}
	if _, err := rma.FetchAdd(ctx, w, 0, 0, 1); !errors.Is(err, rma.ErrClosed) {
		t.Errorf("FetchAdd on a nil window: %v", err)
	}
	if w.Rank() != 0 || w.Size() != 0 || w.Len(0) != 0 || w.Bytes() != nil {
		t.Error("a nil window describes a job")
	}
}

// TestOpenEndedContext: Open with a context that already ended fails and leaves
// nothing behind (TestMain checks for leaked goroutines).
func TestOpenEndedContext(t *testing.T) {
	ctx, cancel := context.WithCancel(alone(t))
	cancel()
	if w, err := rma.Open(ctx, make([]byte, 8)); !errors.Is(err, context.Canceled) || w != nil {
		t.Fatalf("Open with an ended context: %v, %v", w, err)
	}
	w, err := rma.Open(alone(t), make([]byte, 8))
	if err != nil {
		t.Fatalf("Open after a failed one: %v", err)
	}
	if err := w.Close(alone(t)); err != nil {
		t.Fatal(err)
	}
}
