package main

import (
	"context"
	"time"
)

func init() {
	registerXfer(&xferTest{
		name:    "get_lat",
		summary: "get latency: the full round trip of a get from rank 0 to rank 1 (not halved)",
		column:  colLatency,
		about:   "rank 0 gets from rank 1 and waits for the REPLY; latency is the full round trip",
		needDst: true,
		prepare: prepareGet,
		measure: measureGetLat,
		check:   checkGet,
	})
}

// prepareGet clears rank 0's destination, so the check sees only what the gets
// brought. Rank 1's memory keeps the pattern it was linked with.
func prepareGet(b *bench, size int) {
	if b.rank == 0 {
		clear(b.dst[:size])
	}
}

// checkGet checks on rank 0 (whose measure waited for every REPLY) that the
// gets brought rank 1's data.
func checkGet(_ context.Context, b *bench, size, _, _ int) error {
	if b.rank != 0 {
		return nil
	}
	return checkArrived(b.dst, 1, 0, size)
}

// measureGetLat issues one get at a time from rank 0; rank 1 only serves (its
// engine answers while the rank waits at the closing barrier). A get is a round
// trip by nature, so the time is reported as is.
func measureGetLat(ctx context.Context, b *bench, size, warmup, iters int) (float64, error) {
	if b.rank != 0 {
		return 0, nil
	}
	one := func() error {
		if err := b.get(size); err != nil {
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
