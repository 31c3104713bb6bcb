package main

// The direct-access transfer tests, dput_lat and dput_bw, measure puts into
// library memory: every rank exposes md.Alloc memory through one persistent list
// entry on a non-matching logical NI (OP_PUT|OP_GET, link and success events
// disabled, communication counted), the PGAS shape where an initiator on the same
// node stores straight into the target's memory (PTL_DIRECT=auto, the default;
// PTL_DIRECT=off measures the same through the targets' engines). They run as the
// other transfer tests do, with a second NI of each rank's process beside the
// matching NI the other tests use. With -direct, ptlbench -compare measures
// goportals with these two tests instead of put_lat and put_bw, so the ratios are
// those of direct puts to the peers (fi_pingpong, process_vm_writev, memcpy) in the
// same rounds.

import (
	"context"
	"flag"
	"fmt"
	"sync"
	"time"

	portals "github.com/goportals/goportals/internal/nic"
	"github.com/goportals/goportals/md"
)

// directOpts are the flags of the direct-access tests.
var directOpts struct {
	compare bool // -direct: -compare measures dput_lat and dput_bw
}

func directFlags(fs *flag.FlagSet) {
	xferFlags(fs)
	if fs.Lookup("direct") != nil {
		return
	}
	fs.BoolVar(&directOpts.compare, "direct", false, "-compare: measure goportals with dput_lat and dput_bw (puts into md.Alloc memory on a non-matching NI, by direct access) instead of put_lat and put_bw")
}

// oursTest names the transfer test that -compare runs for goportals in place of
// name (put_lat or put_bw).
func oursTest(name string) string {
	if directOpts.compare {
		return "d" + name
	}
	return name
}

func init() {
	registerXfer(&xferTest{
		name:       "dput_lat",
		summary:    "put latency into md.Alloc memory on a non-matching NI (direct access): half the round trip of a ping-pong",
		column:     colLatency,
		about:      "put ping-pong into a persistent list entry over md.Alloc memory (non-matching NI, success events off, CT_COMM); each side puts back once the other's put counted; latency is half the round trip",
		prepare:    func(b *bench, size int) { b.prepareSend(size) },
		measure:    measureDirectLat,
		ownTraffic: true,                                                  // (the direct NI's connection opens in directBench)
		check:      checkDirect(func(warmup, iters int) int { return 0 }), // measure waited for each
	})
	registerXfer(&xferTest{
		name:       "dput_bw",
		summary:    "put bandwidth into md.Alloc memory on a non-matching NI (direct access): windows of acknowledged puts",
		column:     colMBs,
		about:      "rank 0 puts windows of messages (CT_ACK) into a persistent list entry over md.Alloc memory on rank 1 (non-matching NI), each window waited for on its counting event; MB/s is 10^6 bytes/s",
		large:      true,
		prepare:    func(b *bench, size int) { b.prepareSend(size) },
		measure:    measureDirectBW,
		ownTraffic: true,
		check:      checkDirect(func(warmup, iters int) int { return (warmup + iters) * xferOpts.window }),
	})
	for _, t := range []string{"dput_lat", "dput_bw"} {
		registry[t].flags = directFlags
	}
}

// dbench is a rank's second NI for the direct tests, opened on the first size.
type dbench struct {
	ni          *portals.NI
	alloc       *md.Allocation
	recv        []byte
	recvCT      *portals.CT
	srcCT       *portals.CT
	srcMD       *portals.MD
	recvN, srcN uint64
	opened      bool // an operation went to the peer (benchEvent's "dop")
}

// open opens the direct NI's connection between ranks 0 and 1: one untimed
// ping-pong of empty puts, counted on recvCT like the measured ones.
func (d *dbench) open(ctx context.Context, b *bench) error {
	return pingPong(b.rank,
		func() error { return d.put(b, 0, portals.NoAckReq) },
		func() error { return d.waitRecv(ctx, 1) })
}

var dbenches struct {
	sync.Mutex
	m map[*bench]*dbench
}

// openedDirect returns b's direct setup if directBench opened it, else nil.
func openedDirect(b *bench) *dbench {
	dbenches.Lock()
	defer dbenches.Unlock()
	return dbenches.m[b]
}

// directBench returns b's direct setup, opening it (collectively: every rank calls
// measure for the first size at the same time) on first use.
func directBench(ctx context.Context, b *bench) (*dbench, error) {
	dbenches.Lock()
	d := dbenches.m[b]
	dbenches.Unlock()
	if d != nil {
		return d, nil
	}
	d = &dbench{}
	var err error
	if d.ni, err = b.proc.NIInit(portals.IfaceDefault, portals.NINoMatching|portals.NILogical, portals.PIDAny, nil); err != nil {
		return nil, err
	}
	n := max(8, len(b.src))
	if d.alloc, err = md.Alloc(n); err != nil {
		return nil, err
	}
	d.recv = d.alloc.Bytes()
	if _, err = d.ni.PTAlloc(0, nil, xferPT); err != nil {
		return nil, err
	}
	if d.recvCT, err = d.ni.CTAlloc(); err != nil {
		return nil, err
	}
	if _, err = d.ni.LEAppend(xferPT, portals.LESpec{Start: d.recv, CT: d.recvCT, UID: portals.UIDAny,
		Options: portals.MEOpPut | portals.MEOpGet | portals.MEEventLinkDisable | portals.MEEventSuccessDisable |
			portals.MEEventCTComm}, portals.PriorityList, 0); err != nil {
		return nil, err
	}
	if d.srcCT, err = d.ni.CTAlloc(); err != nil {
		return nil, err
	}
	if d.srcMD, err = d.ni.MDBind(portals.MDSpec{Start: b.src, CT: d.srcCT,
		Options: portals.MDEventCTAck | portals.MDEventSuccessDisable}); err != nil {
		return nil, err
	}
	if err := b.barrier(ctx); err != nil {
		return nil, err
	}
	if b.active() {
		// The direct NI's connection opens before the spin, as the matching
		// NI's does for the other tests (see bench.open).
		if err := d.open(ctx, b); err != nil {
			return nil, fmt.Errorf("opening the direct NI's connection: %w", err)
		}
		spinWarm(xferOpts.warm) // (the barrier slept: as before the first size's iterations, see -warm)
	}
	dbenches.Lock()
	if dbenches.m == nil {
		dbenches.m = map[*bench]*dbench{}
	}
	dbenches.m[b] = d
	dbenches.Unlock()
	return d, nil
}

func (d *dbench) put(b *bench, size int, ack portals.AckReq) error {
	if !d.opened {
		d.opened = true
		benchStep("dop")
	}
	return portals.Put(d.srcMD, 0, uint64(size), ack, b.peer, xferPT, 0, 0, 0, 0)
}

func (d *dbench) waitRecv(ctx context.Context, n uint64) error {
	d.recvN += n
	return waitCT(ctx, d.recvCT, d.recvN)
}

func (d *dbench) waitSrc(ctx context.Context, n uint64) error {
	d.srcN += n
	return waitCT(ctx, d.srcCT, d.srcN)
}

func measureDirectLat(ctx context.Context, b *bench, size, warmup, iters int) (float64, error) {
	d, err := directBench(ctx, b)
	if err != nil || !b.active() {
		return 0, err
	}
	benchStep("go")
	put := func() error { return d.put(b, size, portals.NoAckReq) }
	wait := func() error { return d.waitRecv(ctx, 1) }
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

func measureDirectBW(ctx context.Context, b *bench, size, warmup, iters int) (float64, error) {
	d, err := directBench(ctx, b)
	if err != nil || b.rank != 0 {
		return 0, err
	}
	benchStep("go")
	w := xferOpts.window
	window := func() error {
		for i := 0; i < w; i++ {
			if err := d.put(b, size, portals.CTAckReq); err != nil {
				return err
			}
		}
		return d.waitSrc(ctx, uint64(w))
	}
	return timeWindows(warmup, iters, window, func(t time.Duration) float64 {
		return float64(size) * float64(w*iters) / t.Seconds() / 1e6
	})
}

// checkDirect waits on rank 1 until its entry counted the puts rank 0 made of the
// size (puts(warmup, iters) of them), then checks their data.
func checkDirect(puts func(warmup, iters int) int) func(ctx context.Context, b *bench, size, warmup, iters int) error {
	return func(ctx context.Context, b *bench, size, warmup, iters int) error {
		if b.rank != 1 {
			return nil
		}
		d, err := directBench(ctx, b)
		if err != nil {
			return err
		}
		if err := d.waitRecv(ctx, uint64(puts(warmup, iters))); err != nil {
			return err
		}
		return checkArrived(d.recv, 0, size, size)
	}
}
