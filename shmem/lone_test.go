package shmem

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestLone runs roles in this process, a lone PE (0 of 1): everything goes
// through the network interface to itself.
func TestLone(t *testing.T) {
	for _, role := range []string{"putget", "amo", "errors", "alloc", "reduce", "lock"} {
		t.Run(role, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			w, err := Init(ctx, &Options{HeapSize: 8 << 20})
			if err != nil {
				t.Fatal(err)
			}
			if w.MyPE() != 0 || w.NPEs() != 1 {
				t.Fatalf("lone PE is %d of %d", w.MyPE(), w.NPEs())
			}
			rerr := roles[role](ctx, w)
			if err := w.Close(ctx); err != nil {
				t.Error(err)
			}
			if rerr != nil {
				t.Fatal(rerr)
			}
		})
	}
}

// TestClosedWorld: calls after Close fail with ErrClosed.
func TestClosedWorld(t *testing.T) {
	ctx := context.Background()
	w, err := Init(ctx, &Options{HeapSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	s, err := Calloc[int64](ctx, w, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := Put(ctx, w.Ctx(), s, []int64{1}, 0); !errors.Is(err, ErrClosed) {
		t.Errorf("Put after Close: %v", err)
	}
	if err := w.BarrierAll(ctx); !errors.Is(err, ErrClosed) {
		t.Errorf("BarrierAll after Close: %v", err)
	}
	if err := w.Close(ctx); !errors.Is(err, ErrClosed) {
		t.Errorf("second Close: %v", err)
	}
	if s.Local() != nil {
		t.Error("Local after Close is not nil")
	}
}

// TestHeapSizeEnv: SHMEM_SYMMETRIC_SIZE sets the heap; a bad value is an error
// naming the variable.
func TestHeapSizeEnv(t *testing.T) {
	t.Setenv("SHMEM_SYMMETRIC_SIZE", "3M")
	n, err := heapSize(nil)
	if err != nil || n != 3<<20+reserved {
		t.Fatalf("3M: %d %v", n, err)
	}
	for _, bad := range []string{"x", "-1", "0", "12Q"} {
		t.Setenv("SHMEM_SYMMETRIC_SIZE", bad)
		if _, err := heapSize(nil); !errors.Is(err, ErrInvalidArg) {
			t.Errorf("%q: %v", bad, err)
		}
	}
	if _, err := heapSize(&Options{HeapSize: -5}); !errors.Is(err, ErrInvalidArg) {
		t.Errorf("negative HeapSize: %v", err)
	}
}

// TestAllocator: first fit, alignment, merging of neighbours on release.
func TestAllocator(t *testing.T) {
	var a allocator
	a.init(1 << 16)
	x, _ := a.allocate(100, 8)
	y, _ := a.allocate(10, 4096)
	z, _ := a.allocate(8, 8)
	if x != 0 || y != 4096 || z != 104 {
		t.Fatalf("offsets %d %d %d", x, y, z)
	}
	if !a.release(x) || !a.release(z) || a.release(z) {
		t.Fatal("release")
	}
	if !a.release(y) {
		t.Fatal("release y")
	}
	if len(a.free) != 1 || a.free[0] != (span{0, 1 << 16}) {
		t.Fatalf("free list not merged: %v", a.free)
	}
	if _, ok := a.allocate(1<<16+1, 8); ok {
		t.Fatal("allocated more than the heap")
	}
}
