package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/goportals/goportals/eq"
	portals "github.com/goportals/goportals/internal/nic"
)

// eagerBelow is about where the engine switches from inline (eager) data to
// transfers that the target pulls (the eager limit is near 1 KiB).
const eagerBelow = 1024

// le is the byte order of atomic operands: the target computes in host order.
var le = binary.NativeEndian

// client is rank 0's view of rank 1's exposed memory. Every descriptor it binds
// reports to one event queue; operations run one at a time, so the next event
// of the awaited kind belongs to the operation just started.
type client struct {
	ni   *portals.NI
	peer portals.ProcessID
	q    *portals.EQ
}

func newClient(ni *portals.NI, peer portals.ProcessID) (*client, error) {
	q, err := ni.EQAlloc(64)
	if err != nil {
		return nil, err
	}
	return &client{ni: ni, peer: peer, q: q}, nil
}

// bind binds b to a descriptor reporting to the client's queue.
func (c *client) bind(b []byte) (*portals.MD, error) {
	return c.ni.MDBind(portals.MDSpec{Start: b, EQ: c.q})
}

// roundTrip puts n bytes into rank 1's window, gets them back into a cleared
// buffer and compares.
func (c *client) roundTrip(ctx context.Context, n int) error {
	src := make([]byte, n)
	for i := range src {
		src[i] = byte(i*131 + n)
	}
	back := make([]byte, n)
	put, err := c.bind(src)
	if err != nil {
		return err
	}
	defer put.Release()
	get, err := c.bind(back)
	if err != nil {
		return err
	}
	defer get.Release()

	start := time.Now()
	if err := portals.Put(put, 0, uint64(n), portals.AckReqFull, c.peer, ptIndex, dataBits, 0, 0, 0); err != nil {
		return err
	}
	ack, err := waitEvent(ctx, c.q, eq.EventAck)
	if err != nil {
		return err
	}
	putTime := time.Since(start)
	start = time.Now()
	if err := portals.Get(get, 0, uint64(n), c.peer, ptIndex, dataBits, 0, 0); err != nil {
		return err
	}
	reply, err := waitEvent(ctx, c.q, eq.EventReply)
	if err != nil {
		return err
	}
	getTime := time.Since(start)
	if ack.MLength != uint64(n) || reply.MLength != uint64(n) {
		return fmt.Errorf("%w: put moved %d bytes, get %d, of %d", errVerify, ack.MLength, reply.MLength, n)
	}
	if !bytes.Equal(back, src) {
		i := 0
		for back[i] == src[i] {
			i++
		}
		return fmt.Errorf("%w: %d-byte get differs from the put at offset %d", errVerify, n, i)
	}
	how := "eager: inline in the request"
	if n > eagerBelow {
		how = "long: rank 1 pulls it by RDMA READ, pushes it back by RDMA WRITE"
	}
	fmt.Printf("put %s and got it back (%s): verified byte for byte (put+ack %.1f us, get %.1f us)\n",
		size(n), how, us(putTime), us(getTime))
	return nil
}

// atomics adds to rank 1's counter twice with a fetching atomic, then tries a
// compare-and-swap with a stale and with the current value, checking each old
// value that comes back and the counter's final contents.
func (c *client) atomics(ctx context.Context) error {
	operand, result := make([]byte, 8), make([]byte, 8)
	put, err := c.bind(operand)
	if err != nil {
		return err
	}
	defer put.Release()
	get, err := c.bind(result)
	if err != nil {
		return err
	}
	defer get.Release()

	// fetch returns the counter's value before op was applied.
	fetch := func(op eq.AtomicOp, value, compare uint64) (uint64, error) {
		le.PutUint64(operand, value)
		var err error
		if op == eq.OpSum {
			err = portals.FetchAtomic(get, 0, put, 0, 8, c.peer, ptIndex, counterBits, 0, 0, 0, op, eq.Uint64)
		} else {
			cmp := le.AppendUint64(nil, compare)
			err = portals.Swap(get, 0, put, 0, 8, c.peer, ptIndex, counterBits, 0, 0, 0, cmp, op, eq.Uint64)
		}
		if err != nil {
			return 0, err
		}
		if _, err := waitEvent(ctx, c.q, eq.EventReply); err != nil {
			return 0, err
		}
		return le.Uint64(result), nil
	}
	read := func() (uint64, error) {
		if err := portals.Get(get, 0, 8, c.peer, ptIndex, counterBits, 0, 0); err != nil {
			return 0, err
		}
		if _, err := waitEvent(ctx, c.q, eq.EventReply); err != nil {
			return 0, err
		}
		return le.Uint64(result), nil
	}

	const add = 5
	old1, err := fetch(eq.OpSum, add, 0)
	if err != nil {
		return err
	}
	old2, err := fetch(eq.OpSum, add, 0)
	if err != nil {
		return err
	}
	now, err := read()
	if err != nil {
		return err
	}
	if old1 != counterStart || old2 != counterStart+add || now != counterStart+2*add {
		return fmt.Errorf("%w: fetch-add saw %d then %d and left %d, want %d, %d, %d",
			errVerify, old1, old2, now, counterStart, counterStart+add, counterStart+2*add)
	}
	fmt.Printf("fetch-add uint64 +%d twice: fetched %d, %d; counter now %d: verified\n", add, old1, old2, now)

	const stale, swapped = 7, 42
	seen, err := fetch(eq.OpCSwap, swapped, stale)
	if err != nil {
		return err
	}
	if seen != now {
		return fmt.Errorf("%w: compare-and-swap fetched %d, counter was %d", errVerify, seen, now)
	}
	if after, err := read(); err != nil || after != now {
		return fmt.Errorf("%w: compare-and-swap with a stale value changed the counter to %d (%v)", errVerify, after, err)
	}
	if seen, err = fetch(eq.OpCSwap, swapped, now); err != nil {
		return err
	}
	after, err := read()
	if err != nil {
		return err
	}
	if seen != now || after != swapped {
		return fmt.Errorf("%w: compare-and-swap %d->%d fetched %d and left %d", errVerify, now, swapped, seen, after)
	}
	fmt.Printf("compare-and-swap: expecting %d left %d alone; expecting %d swapped in %d: verified\n",
		stale, now, now, swapped)
	return nil
}

// bandwidth streams puts of the whole window, keeping window of them in flight,
// and returns MB/s (10^6 bytes per second). Completion is counted on the
// descriptor's counting event: each put asks for a counted ACK (CTAckReq), which
// rank 1 sends once the data is in its memory.
func (c *client) bandwidth(ctx context.Context, puts, window int) (float64, error) {
	ct, err := c.ni.CTAlloc()
	if err != nil {
		return 0, err
	}
	defer ct.Free()
	src := make([]byte, windowSize)
	md, err := c.ni.MDBind(portals.MDSpec{Start: src, CT: ct, Options: portals.MDEventCTAck})
	if err != nil {
		return 0, err
	}
	defer md.Release()
	issued := uint64(0)
	stream := func(n int) error {
		for i := 0; i < n; i++ {
			if issued >= uint64(window) {
				if err := waitCount(ctx, ct, issued-uint64(window)+1); err != nil {
					return err
				}
			}
			if err := portals.Put(md, 0, windowSize, portals.CTAckReq, c.peer, ptIndex, dataBits, 0, 0, 0); err != nil {
				return err
			}
			issued++
		}
		return waitCount(ctx, ct, issued)
	}
	// A first window warms up the path (registrations, page faults); it is not timed.
	if err := stream(window); err != nil {
		return 0, err
	}
	start := time.Now()
	if err := stream(puts); err != nil {
		return 0, err
	}
	return float64(puts) * windowSize / time.Since(start).Seconds() / 1e6, nil
}

// waitCount waits until ct counts n successes; a counted failure is an error.
func waitCount(ctx context.Context, ct *portals.CT, n uint64) error {
	v, err := ct.Wait(ctx, n)
	if err != nil {
		return err
	}
	if v.Failure != 0 {
		return fmt.Errorf("%d operations failed", v.Failure)
	}
	return nil
}

// waitEvent returns the next event of kind from q, skipping others (SEND events);
// a failed event is an error.
func waitEvent(ctx context.Context, q *portals.EQ, kind eq.EventKind) (portals.Event, error) {
	for {
		ev, err := q.Wait(ctx)
		if err != nil {
			return ev, err
		}
		if ev.Type == kind {
			if ev.NIFail != eq.NIOK {
				return ev, &deliveryError{ev.NIFail}
			}
			return ev, nil
		}
		if ev.NIFail != eq.NIOK {
			return ev, fmt.Errorf("%v event failed: %v", ev.Type, ev.NIFail)
		}
	}
}

func size(n int) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d B", n)
}
