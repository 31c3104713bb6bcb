package main

import (
	"context"
	"time"

	portals "github.com/goportals/goportals/internal/nic"
)

func init() {
	registerXfer(&xferTest{
		name:    "put_lat",
		summary: "put latency: half the round trip of a put ping-pong between ranks 0 and 1",
		column:  colLatency,
		about:   "put ping-pong, each side puts back once the other's put counted on its entry; latency is half the round trip",
		prepare: func(b *bench, size int) { b.prepareSend(size) },
		measure: measurePutLat,
		check: func(_ context.Context, b *bench, size, _, _ int) error {
			if !b.active() {
				return nil
			}
			// Every put of the size was waited for in measure.
			return b.checkReceived(int(b.peer.Rank), size)
		},
	})
}

// measurePutLat runs the ping-pong: rank 0 puts, then waits for rank 1's put to
// land in its entry; rank 1 waits, then puts back. The puts ask for no ACK: the
// counting event on the receiver's entry is the only signal.
func measurePutLat(ctx context.Context, b *bench, size, warmup, iters int) (float64, error) {
	if !b.active() {
		return 0, nil
	}
	put := func() error { return b.put(size, portals.NoAckReq) }
	wait := func() error { return b.waitRecv(ctx, 1) }
	round := func() error { return pingPong(b.rank, put, wait) }
	for i := 0; i < warmup; i++ {
		if err := round(); err != nil {
			return 0, err
		}
	}
	start := time.Now()
	for i := 0; i < iters; i++ {
		if err := round(); err != nil {
			return 0, err
		}
	}
	return micros(time.Since(start)) / float64(2*iters), nil
}

func micros(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
