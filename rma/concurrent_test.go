package rma_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"testing"

	"github.com/goportals/goportals/rma"
)

// TestConcurrentCalls: goroutines share one window, each with its own region,
// mixing blocking calls, Puts and Flushes; every region ends with exactly what its
// goroutine wrote, and the shared counter with every add (run with -race).
func TestConcurrentCalls(t *testing.T) {
	ctx := alone(t)
	const workers, rounds, region = 4, 50, 4096
	mem := make([]byte, 8+workers*region)
	w, err := rma.Open(ctx, mem)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close(ctx)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for g := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- worker(ctx, w, g, rounds, 8+g*region, region)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if err := w.Barrier(ctx); err != nil {
		t.Fatal(err)
	}
	if c := binary.NativeEndian.Uint64(mem); c != workers*rounds {
		t.Errorf("counter %d, want %d", c, workers*rounds)
	}
	for g := range workers {
		off := 8 + g*region
		if want := fill(g, rounds-1, region); !bytes.Equal(mem[off:off+region], want) {
			t.Errorf("worker %d's region does not hold its last round", g)
		}
	}
}

// fill is what worker g writes in round r.
func fill(g, r, n int) []byte {
	return bytes.Repeat([]byte{byte(g*16 + r%16 + 1)}, n)
}

func worker(ctx context.Context, w *rma.Window, g, rounds, off, n int) error {
	back := make([]byte, n)
	for r := range rounds {
		p := fill(g, r, n)
		if r%2 == 0 {
			if err := w.WriteAt(ctx, 0, p, int64(off)); err != nil {
				return err
			}
		} else {
			if err := w.Put(0, p, int64(off)); err != nil {
				return err
			}
			if err := w.Flush(ctx); err != nil {
				return err
			}
		}
		if err := w.ReadAt(ctx, 0, back, int64(off)); err != nil {
			return err
		}
		if !bytes.Equal(back, p) {
			return fmt.Errorf("worker %d round %d read back other bytes", g, r)
		}
		if _, err := rma.FetchAdd(ctx, w, 0, 0, uint64(1)); err != nil {
			return err
		}
	}
	return nil
}

// BenchmarkWriteAt8B is one 8-byte WriteAt to this process's own window.
func BenchmarkWriteAt8B(b *testing.B) {
	benchWindow(b, func(ctx context.Context, w *rma.Window, p []byte) error { return w.WriteAt(ctx, 0, p[:8], 0) })
}

// BenchmarkPutFlush8B is one 8-byte Put followed by a Flush.
func BenchmarkPutFlush8B(b *testing.B) {
	benchWindow(b, func(ctx context.Context, w *rma.Window, p []byte) error {
		if err := w.Put(0, p[:8], 0); err != nil {
			return err
		}
		return w.Flush(ctx)
	})
}

// BenchmarkFetchAdd is one uint64 FetchAdd.
func BenchmarkFetchAdd(b *testing.B) {
	benchWindow(b, func(ctx context.Context, w *rma.Window, p []byte) error {
		_, err := rma.FetchAdd(ctx, w, 0, 0, uint64(1))
		return err
	})
}

func benchWindow(b *testing.B, op func(context.Context, *rma.Window, []byte) error) {
	ctx := context.Background()
	w, err := rma.Open(ctx, make([]byte, 64))
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close(ctx)
	p := make([]byte, 64)
	b.ReportAllocs()
	for b.Loop() {
		if err := op(ctx, w, p); err != nil {
			b.Fatal(err)
		}
	}
}
