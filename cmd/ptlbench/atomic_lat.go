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

// The counter starts at zero on rank 1 and rank 0's operand is one, so the
// value the last fetch returns is the number of operations before it.
func prepareAtomic(b *bench, _ int) {
	switch b.rank {
	case 0:
		binary.NativeEndian.PutUint64(b.src, 1)
		clear(b.dst[:8])
	case 1:
		clear(b.recv[:8])
	}
}

func checkAtomic(b *bench, _ int) error {
	if b.rank != 0 {
		return nil
	}
	if got, want := binary.NativeEndian.Uint64(b.dst), b.dstN-1; got != want {
		return fmt.Errorf("the last fetch-add returned %d, want %d", got, want)
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
	}
	start := time.Now()
	for i := 0; i < iters; i++ {
		if err := one(); err != nil {
			return 0, err
		}
	}
	return micros(time.Since(start)) / float64(iters), nil
}
