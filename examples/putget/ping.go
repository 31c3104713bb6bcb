package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/goportals/goportals/eq"
	portals "github.com/goportals/goportals/internal/nic"
)

// pinger is one rank's side of the small-message traffic: an 8-byte entry that
// peers put into (its counting event counts arrivals) and an 8-byte descriptor to
// put from. The ready handshake, the latency ping-pong and the final "done" all go
// through it.
type pinger struct {
	ct   *portals.CT // counts the puts that landed in our ping entry
	seen uint64      // how many of them we have consumed
	md   *portals.MD // the 8 bytes we send
	q    *portals.EQ // ACK events of our acknowledged puts
}

func newPinger(ni *portals.NI) (*pinger, error) {
	ct, err := ni.CTAlloc()
	if err != nil {
		return nil, err
	}
	// MEEventCTComm: count every put that lands here on ct.
	if _, err := ni.MEAppend(ptIndex, portals.MESpec{Start: make([]byte, 8), CT: ct, UID: portals.UIDAny,
		MatchID: anyone, MatchBits: pingBits, Options: portals.MEOpPut | portals.MEEventCTComm},
		portals.PriorityList, 0); err != nil {
		return nil, err
	}
	q, err := ni.EQAlloc(16)
	if err != nil {
		return nil, err
	}
	// SEND events would only fill the queue: the ping-pong's puts are
	// unacknowledged and the others wait for their ACK.
	md, err := ni.MDBind(portals.MDSpec{Start: make([]byte, 8), EQ: q, Options: portals.MDEventSendDisable})
	if err != nil {
		return nil, err
	}
	return &pinger{ct: ct, md: md, q: q}, nil
}

// send puts 8 bytes into peer's ping entry. With ack it waits for the ACK and
// reports a failed delivery as an error.
func (p *pinger) send(ctx context.Context, peer portals.ProcessID, ack bool) error {
	if !ack {
		return portals.Put(p.md, 0, 8, portals.NoAckReq, peer, ptIndex, pingBits, 0, 0, 0)
	}
	if err := portals.Put(p.md, 0, 8, portals.AckReqFull, peer, ptIndex, pingBits, 0, 0, 0); err != nil {
		return err
	}
	_, err := waitEvent(ctx, p.q, eq.EventAck)
	return err
}

// await waits for the next put into our ping entry.
func (p *pinger) await(ctx context.Context) error {
	p.seen++
	v, err := p.ct.Wait(ctx, p.seen)
	if err != nil {
		return err
	}
	if v.Failure != 0 {
		return fmt.Errorf("a put into the ping entry failed (%d failures counted)", v.Failure)
	}
	return nil
}

// ready tells peer that our entries are linked. Its entry may not be linked yet
// itself: a put that finds no matching entry is dropped and its ACK says so
// (NI_DROPPED, or NI_PT_DISABLED before the peer allocated the portal table
// entry), so we try again until the deadline.
func (p *pinger) ready(ctx context.Context, peer portals.ProcessID) error {
	for {
		err := p.send(ctx, peer, true)
		var dropped *deliveryError
		if !errors.As(err, &dropped) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("rank %d never linked its ping entry: %w", peer.Rank, err)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// pong runs iters timed round trips (after a tenth as many untimed ones to warm up)
// and returns the one-way latency, half the average round trip. The first side
// puts and then waits; the other waits and then puts back. Neither side replies
// before the other's put has landed, so each round trip is two full one-way trips.
func (p *pinger) pong(ctx context.Context, peer portals.ProcessID, first bool, iters int) (time.Duration, error) {
	step := func() error {
		if first {
			if err := p.send(ctx, peer, false); err != nil {
				return err
			}
			return p.await(ctx)
		}
		if err := p.await(ctx); err != nil {
			return err
		}
		return p.send(ctx, peer, false)
	}
	for i := 0; i < iters/10; i++ {
		if err := step(); err != nil {
			return 0, err
		}
	}
	start := time.Now()
	for i := 0; i < iters; i++ {
		if err := step(); err != nil {
			return 0, err
		}
	}
	return time.Since(start) / time.Duration(2*iters), nil
}

// deliveryError says that a put reached the peer but was not delivered: its ACK
// carried a failure.
type deliveryError struct{ fail portals.NIFail }

func (e *deliveryError) Error() string { return fmt.Sprintf("put not delivered: %v", e.fail) }
