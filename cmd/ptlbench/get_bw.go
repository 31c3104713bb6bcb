package main

import (
	"context"
	"time"
)

func init() {
	registerXfer(&xferTest{
		name:    "get_bw",
		summary: "get bandwidth: windows of gets by rank 0 from rank 1",
		column:  colMBs,
		about:   "rank 0 issues a window of gets, then waits for all their REPLYs on its descriptor's counting event; MB/s is 10^6 bytes/s",
		large:   true,
		needDst: true,
		prepare: prepareGet,
		measure: measureGetBW,
		check:   checkGet,
	})
}

func measureGetBW(ctx context.Context, b *bench, size, warmup, iters int) (float64, error) {
	if b.rank != 0 {
		return 0, nil
	}
	w := xferOpts.window
	window := func() error {
		for i := 0; i < w; i++ {
			if err := b.get(size); err != nil {
				return err
			}
		}
		return b.waitDst(ctx, uint64(w))
	}
	return timeWindows(warmup, iters, window, func(d time.Duration) float64 {
		return float64(size) * float64(w*iters) / d.Seconds() / 1e6
	})
}
