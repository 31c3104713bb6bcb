package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"
)

func init() {
	registerXfer(&xferTest{
		name:       "atomic_lat",
		summary:    "fetch-add latency: the full round trip of an 8-byte PTL_SUM fetching atomic (not halved)",
		column:     colLatency,
		about:      "rank 0 adds 1 to a uint64 at rank 1 (PtlFetchAtomic, PTL_SUM) and waits for the old value; latency is the full round trip; size is always 8",
		fixedSizes: []int{8},
		needDst:    true,
		prepare:    prepareAtomic,
		measure:    measureAtomicLat,
		check:      checkAtomic,
	})
}

// Rank 0's operand is one, so each fetch returns one more than the one before:
// the first fetch of a size reads the counter's start value (whatever rank 1's
// memory held), and the last must return start + count - 1.
func prepareAtomic(b *bench, _ int) {
	if b.rank == 0 {
		binary.NativeEndian.PutUint64(b.src, 1)
		clear(b.dst[:8])
	}
}

// atomicRun is what rank 0 saw during one size: the counter before the first
// fetch and the number of fetches.
var atomicRun struct{ start, count uint64 }

func checkAtomic(_ context.Context, b *bench, _, _, _ int) error {
	if b.rank != 0 {
		return nil
	}
	if got, want := binary.NativeEndian.Uint64(b.dst), atomicRun.start+atomicRun.count-1; got != want {
		return fmt.Errorf("the last of %d fetch-adds from %d returned %d, want %d", atomicRun.count, atomicRun.start, got, want)
	}
	return nil
}

func measureAtomicLat(ctx context.Context, b *bench, _, warmup, iters int) (float64, error) {
	if b.rank != 0 {
		return 0, nil
	}
	one := func() error {
		if err := b.fetchAdd(); err != nil {
			return err
		}
		return b.waitDst(ctx, 1)
	}
	for i := 0; i < warmup; i++ {
		if err := one(); err != nil {
			return 0, err
		}
		if i == 0 {
			atomicRun.start = binary.NativeEndian.Uint64(b.dst)
		}
	}
	start := time.Now()
	for i := 0; i < iters; i++ {
		if err := one(); err != nil {
			return 0, err
		}
	}
	d := time.Since(start)
	atomicRun.count = uint64(warmup + iters)
	return micros(d) / float64(iters), nil
}
