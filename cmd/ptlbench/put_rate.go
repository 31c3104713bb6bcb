package main

import (
	"context"
	"time"

	portals "github.com/goportals/goportals/internal/nic"
)

func init() {
	registerXfer(&xferTest{
		name:    "put_rate",
		summary: "put message rate: windows of unacknowledged puts from rank 0, each window answered by rank 1",
		column:  colRate,
		about:   "rank 0 puts a window of messages without ACK; rank 1 puts 8 B back once the whole window counted on its entry; msgs/s counts delivered puts",
		large:   true,
		prepare: func(b *bench, size int) { b.prepareSend(size) },
		measure: measurePutRate,
		check: func(_ context.Context, b *bench, size, _, _ int) error {
			if b.rank != 1 {
				return nil
			}
			// Rank 1 counted every window's puts in measure.
			return b.checkReceived(0, size)
		},
	})
}

// measurePutRate: the window's puts carry no ACK, so the only completion signal
// is rank 1's answer, sent once its entry counted the whole window. Every message
// counted was delivered into rank 1's memory.
func measurePutRate(ctx context.Context, b *bench, size, warmup, iters int) (float64, error) {
	if !b.active() {
		return 0, nil
	}
	w := xferOpts.window
	window := func() error {
		if b.rank == 1 {
			if err := b.waitRecv(ctx, uint64(w)); err != nil {
				return err
			}
			return b.put(8, portals.NoAckReq)
		}
		for i := 0; i < w; i++ {
			if err := b.put(size, portals.NoAckReq); err != nil {
				return err
			}
		}
		return b.waitRecv(ctx, 1)
	}
	return timeWindows(warmup, iters, window, func(d time.Duration) float64 {
		return float64(w*iters) / d.Seconds()
	})
}
