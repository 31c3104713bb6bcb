package main

import (
	"context"
	"time"

	portals "github.com/goportals/goportals/internal/nic"
)

func init() {
	registerXfer(&xferTest{
		name:    "put_bw",
		summary: "put bandwidth: windows of acknowledged puts from rank 0 to rank 1",
		column:  colMBs,
		about:   "rank 0 puts a window of messages (CT_ACK), then waits for all their ACKs on its descriptor's counting event; MB/s is 10^6 bytes/s",
		large:   true,
		prepare: func(b *bench, size int) { b.prepareSend(size) },
		measure: measurePutBW,
		check:   checkPutWindows,
	})
}

// checkPutWindows waits on rank 1 until its entry counted every put of the size,
// then checks the data that rank 0 put.
func checkPutWindows(ctx context.Context, b *bench, size, warmup, iters int) error {
	if b.rank != 1 {
		return nil
	}
	if err := b.waitRecv(ctx, uint64((warmup+iters)*xferOpts.window)); err != nil {
		return err
	}
	return b.checkReceived(0, size)
}

// measurePutBW issues iters windows of puts, each completed when all its puts
// are acknowledged (CTAckReq: the ACK is counted on src's counting event once the
// data is in rank 1's memory).
func measurePutBW(ctx context.Context, b *bench, size, warmup, iters int) (float64, error) {
	if b.rank != 0 {
		return 0, nil
	}
	w := xferOpts.window
	window := func() error {
		for i := 0; i < w; i++ {
			if err := b.put(size, portals.CTAckReq); err != nil {
				return err
			}
		}
		return b.waitSrc(ctx, uint64(w))
	}
	return timeWindows(warmup, iters, window, func(d time.Duration) float64 {
		return float64(size) * float64(w*iters) / d.Seconds() / 1e6
	})
}

// timeWindows runs warmup untimed and iters timed windows and converts the time
// of the timed ones.
func timeWindows(warmup, iters int, window func() error, per func(time.Duration) float64) (float64, error) {
	for i := 0; i < warmup; i++ {
		if err := window(); err != nil {
			return 0, err
		}
	}
	start := time.Now()
	for i := 0; i < iters; i++ {
		if err := window(); err != nil {
			return 0, err
		}
	}
	return per(time.Since(start)), nil
}
