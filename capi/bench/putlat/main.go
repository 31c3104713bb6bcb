// Command putlat measures put latency through the Go API, with the protocol of
// the C ABI's benchmark (capi/tests/ptl_putlat.c), so the two compare in one
// run: two ranks (ptlrun -np 2) ping-pong 8-byte puts without acknowledgment,
// each rank's entry counting arrivals on a counting event. It prints the
// one-way latency (half the round trip) on rank 0: the mean, and half the
// median round trip, which a shared machine's scheduling hiccups move less.
//
// Usage: putlat [iterations]
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/goportals/goportals/portals"
)

const (
	ptIndex  = 9
	barBits  = 0xBA77
	dataBits = 0x1
	warmup   = 1000
)

func main() {
	iters := 20000
	if len(os.Args) > 1 {
		n, err := strconv.Atoi(os.Args[1])
		if err != nil || n < 1 {
			fmt.Fprintln(os.Stderr, "usage: putlat [iterations]")
			os.Exit(2)
		}
		iters = n
	}
	if err := run(iters); err != nil {
		fmt.Fprintln(os.Stderr, "putlat:", err)
		os.Exit(1)
	}
}

func run(iters int) error {
	ctx := context.Background()
	if err := portals.Init(); err != nil {
		return err
	}
	defer portals.Fini()
	ni, err := portals.NIInit(portals.IfaceDefault, portals.NIMatching|portals.NILogical, portals.PIDAny, nil)
	if err != nil {
		return err
	}
	defer ni.Fini()
	self, err := ni.ID()
	if err != nil {
		return err
	}
	peer := portals.ProcessID{Rank: 1 - self.Rank}
	q, err := ni.EQAlloc(64)
	if err != nil {
		return err
	}
	pt, err := ni.PTAlloc(0, q, ptIndex)
	if err != nil {
		return err
	}
	ct, err := ni.CTAlloc()
	if err != nil {
		return err
	}
	bct, err := ni.CTAlloc()
	if err != nil {
		return err
	}
	buf, bbuf, src := make([]byte, 8), make([]byte, 8), []byte("latency\x00")
	opts := portals.MEOpPut | portals.MEEventCTComm | portals.MEEventCommDisable | portals.MEEventLinkDisable
	any := portals.ProcessID{Rank: portals.RankAny}
	me, err := pt.Append(portals.MESpec{Start: buf, CT: ct, UID: portals.UIDAny, Options: opts, MatchID: any,
		MatchBits: dataBits}, portals.PriorityList, 0)
	if err != nil {
		return err
	}
	bme, err := pt.Append(portals.MESpec{Start: bbuf, CT: bct, UID: portals.UIDAny, Options: opts, MatchID: any,
		MatchBits: barBits}, portals.PriorityList, 0)
	if err != nil {
		return err
	}
	md, err := ni.MDBind(portals.MDSpec{Start: src})
	if err != nil {
		return err
	}
	bmd, err := ni.MDBind(portals.MDSpec{Start: src, EQ: q, Options: portals.MDEventSendDisable})
	if err != nil {
		return err
	}
	data := md.Span(0, 8)
	to := portals.Target{ID: peer, PT: ptIndex, Match: dataBits}
	bar := portals.Target{ID: peer, PT: ptIndex, Match: barBits}

	// Start together: put to the peer's barrier entry until it is there.
	for {
		if err := bmd.Span(0, 1).Put(bar, portals.OpOptions{Ack: portals.AckReqFull}); err != nil {
			return err
		}
		wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		ev, err := q.Wait(wctx)
		cancel()
		if err != nil {
			return err
		}
		if ev.Type == portals.EventAck && ev.NIFail == portals.NIOK {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if _, err := bct.Wait(ctx, 1); err != nil {
		return err
	}

	var t0, prev time.Time
	rts := make([]time.Duration, 0, iters) // rank 0's round trips, one by one
	for i := 0; i < warmup+iters; i++ {
		if i == warmup {
			t0 = time.Now()
			prev = t0
		}
		if self.Rank == 0 {
			if err := data.Put(to, portals.OpOptions{}); err != nil {
				return err
			}
			if _, err := ct.Wait(ctx, uint64(i+1)); err != nil {
				return err
			}
			if i >= warmup {
				now := time.Now()
				rts = append(rts, now.Sub(prev))
				prev = now
			}
		} else {
			if _, err := ct.Wait(ctx, uint64(i+1)); err != nil {
				return err
			}
			if err := data.Put(to, portals.OpOptions{}); err != nil {
				return err
			}
		}
	}
	dt := time.Since(t0)
	if self.Rank == 0 {
		slices.Sort(rts)
		fmt.Printf("putlat api=go bytes=8 iters=%d oneway_us=%.3f median_oneway_us=%.3f\n", iters,
			dt.Seconds()/float64(iters)/2*1e6, rts[len(rts)/2].Seconds()/2*1e6)
	}

	// Leave together, so no put is left in flight toward a finished rank.
	if err := bmd.Span(0, 1).Put(bar, portals.OpOptions{Ack: portals.AckReqFull}); err != nil {
		return err
	}
	if _, err := bct.Wait(ctx, 2); err != nil {
		return err
	}
	for {
		ev, err := q.Wait(ctx)
		if err != nil {
			return err
		}
		if ev.Type == portals.EventAck {
			break
		}
	}
	for _, e := range []*portals.ME{me, bme} {
		for {
			err := e.Unlink()
			if !errors.Is(err, portals.InUse) {
				if err != nil {
					return err
				}
				break
			}
			time.Sleep(time.Millisecond)
		}
	}
	return errors.Join(md.Release(), bmd.Release(), ct.Free(), bct.Free(), pt.Free(), q.Free())
}
