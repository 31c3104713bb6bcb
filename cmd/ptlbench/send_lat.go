package main

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"github.com/goportals/goportals/internal/verbs"
	"github.com/goportals/goportals/internal/verbs/soft"
)

// send_lat is the yardstick under put_lat: an inline SEND ping-pong on the soft
// verbs provider between ranks 0 and 1, with no Portals engine around it. Each
// rank opens its own soft context (the Portals process the harness opens stays
// idle beside it, as the peers' processes do in -compare), exchanges queue pair
// addresses through the bootstrap, and keeps sendLatDepth receives posted,
// replenished after the next send left, so the critical path holds the SEND and
// the receive completion only (as OSU latency does).

// sendLatMax is the largest size send_lat measures: SENDs up to it go inline
// (copied at post, as the engine's eager messages are).
const sendLatMax = 1024

// sendLatDepth is how many receives each side keeps posted.
const sendLatDepth = 64

func init() {
	registerXfer(&xferTest{
		name:    "send_lat",
		summary: "the soft verbs provider's SEND latency: half the round trip of an inline SEND ping-pong, no Portals engine",
		column:  colLatency,
		about:   "inline SEND ping-pong on the soft provider's queue pairs; latency is half the round trip",
		measure: measureSendLat,
		// (the Portals process stays idle beside the yardstick)
		ownTraffic: true,
	})
}

// rawPair is one rank's end of the send_lat connection.
type rawPair struct {
	ctx  *soft.Context
	pd   verbs.PD
	cq   verbs.CQ
	qp   verbs.QP
	mr   verbs.MR
	buf  []byte
	recv []verbs.RecvWR
	send []verbs.SendWR
	wc   [16]verbs.WorkCompletion
}

func (p *rawPair) close() {
	if p.qp != nil {
		p.qp.Close()
	}
	if p.mr != nil {
		p.mr.Dereg()
	}
	if p.cq != nil {
		p.cq.Close()
	}
	if p.pd != nil {
		p.pd.Close()
	}
	if p.ctx != nil {
		p.ctx.Close()
	}
}

// openRawPair connects rank 0's and rank 1's queue pairs. Every rank takes part
// in the bootstrap's fence; only ranks 0 and 1 open anything.
func openRawPair(ctx context.Context, b *bench) (p *rawPair, err error) {
	p = &rawPair{}
	defer func() {
		if err != nil {
			p.close()
			p = nil
		}
	}()
	if b.active() {
		if p.ctx, err = soft.Open(); err != nil {
			return p, err
		}
		if p.pd, err = p.ctx.AllocPD(); err != nil {
			return p, err
		}
		if p.cq, err = p.ctx.CreateCQ(4 * sendLatDepth); err != nil {
			return p, err
		}
		if p.qp, err = p.pd.CreateQP(verbs.QPAttr{SendCQ: p.cq, RecvCQ: p.cq, MaxSendWR: 256,
			MaxRecvWR: sendLatDepth, MaxSGE: 1}); err != nil {
			return p, err
		}
		p.buf = make([]byte, 2*sendLatMax)
		if p.mr, err = p.pd.RegMR(p.buf, verbs.AccessLocalWrite); err != nil {
			return p, err
		}
		if err = b.boot.Put("send_lat.qp", p.qp.Address()); err != nil {
			return p, err
		}
	}
	benchStep("sleep")
	if err = b.boot.Fence(ctx); err != nil {
		return p, err
	}
	if !b.active() {
		return p, nil
	}
	addr, err := b.boot.Get(ctx, 1-b.rank, "send_lat.qp")
	if err != nil {
		return p, err
	}
	if err = p.qp.Connect(verbs.Address(addr)); err != nil {
		return p, err
	}
	p.recv = []verbs.RecvWR{{SG: []verbs.SGE{{Addr: p.mr.Addr(), Length: sendLatMax, LKey: p.mr.LKey()}}}}
	for i := 0; i < sendLatDepth; i++ {
		if err = p.qp.PostRecv(p.recv); err != nil {
			return p, err
		}
	}
	p.send = []verbs.SendWR{{Opcode: verbs.OpSend, Flags: verbs.SendInline,
		SG: []verbs.SGE{{Addr: p.mr.Addr() + sendLatMax, Length: 8}}}}
	return p, nil
}

// pingPong runs n round trips of size-byte SENDs; rank 0 sends first.
func (p *rawPair) pingPong(ctx context.Context, rank, size, n int) error {
	p.send[0].SG[0].Length = uint32(size)
	repost := 0
	for i := 0; i < n; i++ {
		if rank == 0 {
			if err := p.qp.PostSend(p.send); err != nil {
				return err
			}
		}
		for ; repost > 0; repost-- {
			if err := p.qp.PostRecv(p.recv); err != nil {
				return err
			}
		}
		if err := p.waitRecv(ctx, size); err != nil {
			return fmt.Errorf("round trip %d: %w", i, err)
		}
		repost++
		if rank == 1 {
			if err := p.qp.PostSend(p.send); err != nil {
				return err
			}
		}
	}
	for ; repost > 0; repost-- {
		if err := p.qp.PostRecv(p.recv); err != nil {
			return err
		}
	}
	return nil
}

// waitRecv polls the completion queue until a receive of size bytes completed; it
// looks at the clock and ctx only every few thousand empty polls.
func (p *rawPair) waitRecv(ctx context.Context, size int) error {
	for spin := 1; ; spin++ {
		k, err := p.cq.Poll(p.wc[:])
		if err != nil {
			return err
		}
		got := false
		for _, w := range p.wc[:k] {
			if w.Status != verbs.StatusSuccess {
				return fmt.Errorf("completion %+v: %v", w, w.Status)
			}
			if w.Opcode == verbs.WCRecv {
				if int(w.ByteLen) != size {
					return fmt.Errorf("received %d bytes, want %d", w.ByteLen, size)
				}
				got = true
			}
		}
		if got {
			return nil
		}
		if k == 0 && spin%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
			runtime.Gosched()
		}
	}
}

func measureSendLat(ctx context.Context, b *bench, size, warmup, iters int) (float64, error) {
	if size > sendLatMax {
		return 0, fmt.Errorf("%w: send_lat measures up to %d bytes (inline SENDs)", errUsage, sendLatMax)
	}
	p, err := openRawPair(ctx, b)
	if err != nil {
		return 0, err
	}
	defer p.close()
	if b.active() {
		spinWarm(xferOpts.warm) // the set-up's fence slept after the harness's spin (see -warm)
	}
	lat, err := p.measure(ctx, b, size, warmup, iters)
	if err != nil {
		return 0, err
	}
	// Nobody closes a queue pair before its peer has the last message: a peer
	// that goes away flushes the receives still posted, and the last answer could
	// meet a flushed one first.
	return lat, b.barrier(ctx)
}

// measure runs the warm-up and the timed ping-pong (ranks 0 and 1 only).
func (p *rawPair) measure(ctx context.Context, b *bench, size, warmup, iters int) (float64, error) {
	if !b.active() {
		return 0, nil
	}
	benchStep("go")
	if err := p.pingPong(ctx, b.rank, size, warmup); err != nil {
		return 0, err
	}
	// Both sides warmed up before the clock starts: rank 1 answers the last warm-up
	// round trip before it enters the timed loop, so no barrier is needed.
	start := time.Now()
	if err := p.pingPong(ctx, b.rank, size, iters); err != nil {
		return 0, err
	}
	return micros(time.Since(start)) / float64(2*iters), nil
}
