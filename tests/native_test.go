package tests

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/goportals/goportals/eq"
	"github.com/goportals/goportals/internal/bootstrap"
	portals "github.com/goportals/goportals/internal/nic"
)

// Native conformance scenarios: what the XML corpus does not cover, written against
// the Go API and run on two ranks. Each is registered in scenarios and started by a
// Test function through launch.

func init() {
	scenarios["matching-order"] = matchingOrder
	scenarios["flow-control"] = flowControl
	scenarios["triggered-chain"] = triggeredChain
}

// logicalNI opens a matching, logically addressed NI with one portal table entry
// (index 0) and an event queue on it.
func logicalNI(p *portals.Process, opts portals.PTOptions) (*portals.NI, *portals.EQ, error) {
	ni, err := p.NIInit(portals.IfaceDefault, portals.NIMatching|portals.NILogical, portals.PIDAny, nil)
	if err != nil {
		return nil, nil, err
	}
	q, err := ni.EQAlloc(64)
	if err != nil {
		return nil, nil, err
	}
	if _, err := ni.PTAlloc(opts, q, 0); err != nil {
		return nil, nil, err
	}
	return ni, q, nil
}

// nextEvent waits for the next event of q that is not a LINK event.
func nextEvent(ctx context.Context, q *portals.EQ) (portals.Event, error) {
	for {
		ev, err := q.Wait(ctx)
		if err != nil {
			return ev, fmt.Errorf("waiting for an event: %w", err)
		}
		if ev.Type != eq.EventLink {
			return ev, nil
		}
	}
}

// expectEvent waits for the next event of kind k that is not an AUTO_UNLINK (whose
// position relative to the comm event is reported by the corpus) and returns it.
func expectEvent(ctx context.Context, q *portals.EQ, k eq.EventKind) (portals.Event, error) {
	for {
		ev, err := nextEvent(ctx, q)
		if err != nil {
			return ev, err
		}
		if ev.Type == eq.EventAutoUnlink && k != eq.EventAutoUnlink {
			continue
		}
		if ev.Type != k || ev.NIFail != eq.NIOK {
			return ev, fmt.Errorf("event %v (ni_fail %v), want %v", ev.Type, ev.NIFail, k)
		}
		return ev, nil
	}
}

// matchingOrder checks the order in which one initiator's messages meet a target's
// lists: an entry that accepts only another rank is passed over; use-once priority
// entries take messages in the order appended; later messages go to the overflow
// entry in arrival order; an entry appended afterwards finds the oldest unexpected
// message first.
func matchingOrder(ctx context.Context, b bootstrap.Bootstrap, p *portals.Process) error {
	ni, q, err := logicalNI(p, 0)
	if err != nil {
		return err
	}
	const match = 0x77
	const n = 5
	if b.Rank() == 1 {
		self := portals.ProcessID{Rank: 1}
		any := portals.ProcessID{NID: portals.NIDAny, PID: portals.PIDAny, Rank: portals.RankAny}
		bufs := make([][]byte, 4)
		for i := range bufs {
			bufs[i] = make([]byte, 64)
		}
		appendME := func(id portals.ProcessID, opts portals.MEOptions, list portals.List, buf []byte, user uint64) error {
			_, err := ni.MEAppend(0, portals.MESpec{Start: buf, UID: portals.UIDAny, Options: opts | portals.MEOpPut,
				MatchID: id, MatchBits: match}, list, user)
			return err
		}
		// user 10: only rank 1 itself; 11, 12: use-once, in order; 13: overflow, locally managed.
		if err := appendME(self, 0, portals.PriorityList, bufs[0], 10); err != nil {
			return err
		}
		for i, u := range []uint64{11, 12} {
			if err := appendME(any, portals.MEUseOnce, portals.PriorityList, bufs[1+i], u); err != nil {
				return err
			}
		}
		if err := appendME(any, portals.MEManageLocal, portals.OverflowList, bufs[3], 13); err != nil {
			return err
		}
		if err := b.Barrier(ctx); err != nil {
			return err
		}
		wantUser := []uint64{11, 12, 13, 13, 13}
		for i := 0; i < n; i++ {
			ev, err := expectEvent(ctx, q, eq.EventPut)
			if err != nil {
				return fmt.Errorf("message %d: %w", i, err)
			}
			if ev.UserPtr != wantUser[i] || ev.Initiator.Rank != 0 || ev.MLength != 8 {
				return fmt.Errorf("message %d landed in entry %d (initiator %d, mlength %d), want entry %d",
					i, ev.UserPtr, ev.Initiator.Rank, ev.MLength, wantUser[i])
			}
		}
		for i, want := range [][]byte{bufs[1][:8], bufs[2][:8]} {
			if !bytes.Equal(want, bytes.Repeat([]byte{byte(i)}, 8)) {
				return fmt.Errorf("use-once entry %d holds % x, want message %d", 11+i, want, i)
			}
		}
		for k := 0; k < 3; k++ {
			if got := bufs[3][8*k : 8*k+8]; !bytes.Equal(got, bytes.Repeat([]byte{byte(2 + k)}, 8)) {
				return fmt.Errorf("overflow entry at offset %d holds % x, want message %d", 8*k, got, 2+k)
			}
		}
		if !bytes.Equal(bufs[0], make([]byte, 64)) {
			return fmt.Errorf("the entry that accepts only rank 1 received data: % x", bufs[0][:16])
		}
		// A new priority entry meets the unexpected messages oldest first.
		late := make([]byte, 64)
		if err := appendME(any, portals.MEUseOnce, portals.PriorityList, late, 14); err != nil {
			return err
		}
		ev, err := expectEvent(ctx, q, eq.EventPutOverflow)
		if err != nil {
			return fmt.Errorf("late entry: %w", err)
		}
		if ev.UserPtr != 14 || ev.Start != 0 || ev.RLength != 8 {
			return fmt.Errorf("late entry matched user %d start %d rlength %d, want the oldest unexpected message (user 14, start 0, rlength 8)",
				ev.UserPtr, ev.Start, ev.RLength)
		}
		return b.Barrier(ctx)
	}
	buf := make([]byte, 8*n)
	for i := 0; i < n; i++ {
		copy(buf[8*i:], bytes.Repeat([]byte{byte(i)}, 8))
	}
	mdq, err := ni.EQAlloc(2 * n)
	if err != nil {
		return err
	}
	m, err := ni.MDBind(portals.MDSpec{Start: buf, EQ: mdq})
	if err != nil {
		return err
	}
	if err := b.Barrier(ctx); err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		if err := portals.Put(m, uint64(8*i), 8, portals.NoAckReq, portals.ProcessID{Rank: 1}, 0, match, 0, uint64(i), 0); err != nil {
			return fmt.Errorf("put %d: %w", i, err)
		}
	}
	for i := 0; i < n; i++ {
		ev, err := expectEvent(ctx, mdq, eq.EventSend)
		if err != nil {
			return fmt.Errorf("send %d: %w", i, err)
		}
		if ev.UserPtr != uint64(i) {
			return fmt.Errorf("SEND %d for operation %d: completions out of order", i, ev.UserPtr)
		}
	}
	if err := b.Barrier(ctx); err != nil {
		return err
	}
	return m.Release()
}

// flowControl checks recovery from flow control: a message that finds no entry on a
// flow-controlled entry disables it (PT_DISABLED at the target, ACK with PT_DISABLED
// at the initiator); messages are refused while it is disabled; after the target
// appends an entry and re-enables it, a resent message is delivered.
func flowControl(ctx context.Context, b bootstrap.Bootstrap, p *portals.Process) error {
	ni, q, err := logicalNI(p, portals.PTFlowCtrl)
	if err != nil {
		return err
	}
	target := portals.ProcessID{Rank: 1}
	if b.Rank() == 1 {
		if err := b.Barrier(ctx); err != nil { // 1: nothing appended yet
			return err
		}
		if err := b.Barrier(ctx); err != nil { // 2: rank 0 saw its put refused
			return err
		}
		ev, err := nextEvent(ctx, q)
		if err != nil {
			return err
		}
		if ev.Type != eq.EventPTDisabled || ev.NIFail != eq.NIPTDisabled {
			return fmt.Errorf("first event %v (ni_fail %v), want PT_DISABLED", ev.Type, ev.NIFail)
		}
		buf := make([]byte, 16)
		if _, err := ni.MEAppend(0, portals.MESpec{Start: buf, UID: portals.UIDAny, Options: portals.MEOpPut,
			MatchID: portals.ProcessID{Rank: portals.RankAny}, MatchBits: 1}, portals.PriorityList, 5); err != nil {
			return err
		}
		if err := ni.PTEnable(0); err != nil {
			return fmt.Errorf("PTEnable after flow control: %w", err)
		}
		if err := b.Barrier(ctx); err != nil { // 3: re-enabled
			return err
		}
		ev, err = expectEvent(ctx, q, eq.EventPut)
		if err != nil {
			return fmt.Errorf("after recovery: %w", err)
		}
		if ev.UserPtr != 5 || !bytes.Equal(buf[:4], []byte{9, 9, 9, 9}) {
			return fmt.Errorf("after recovery: user %d data % x", ev.UserPtr, buf[:4])
		}
		return b.Barrier(ctx) // 4
	}
	mdq, err := ni.EQAlloc(16)
	if err != nil {
		return err
	}
	m, err := ni.MDBind(portals.MDSpec{Start: []byte{9, 9, 9, 9}, EQ: mdq})
	if err != nil {
		return err
	}
	if err := b.Barrier(ctx); err != nil { // 1
		return err
	}
	if err := portals.Put(m, 0, 4, portals.AckReqFull, target, 0, 1, 0, 1, 0); err != nil {
		return err
	}
	if _, err := expectEvent(ctx, mdq, eq.EventSend); err != nil {
		return err
	}
	ev, err := nextEvent(ctx, mdq)
	if err != nil {
		return err
	}
	if ev.Type != eq.EventAck || ev.NIFail != eq.NIPTDisabled {
		return fmt.Errorf("put to a flow-controlled entry with no match: %v (ni_fail %v), want ACK with PT_DISABLED", ev.Type, ev.NIFail)
	}
	if err := b.Barrier(ctx); err != nil { // 2
		return err
	}
	if err := b.Barrier(ctx); err != nil { // 3
		return err
	}
	if err := portals.Put(m, 0, 4, portals.AckReqFull, target, 0, 1, 0, 2, 0); err != nil {
		return err
	}
	if _, err := expectEvent(ctx, mdq, eq.EventSend); err != nil {
		return err
	}
	if ev, err = expectEvent(ctx, mdq, eq.EventAck); err != nil {
		return fmt.Errorf("resent put after recovery: %w", err)
	}
	if ev.UserPtr != 2 || ev.MLength != 4 {
		return fmt.Errorf("ACK user %d mlength %d", ev.UserPtr, ev.MLength)
	}
	if err := b.Barrier(ctx); err != nil { // 4
		return err
	}
	return m.Release()
}

// triggeredChain checks a chain of triggered operations across counters: an increment
// of counter a fires a put and an increment of counter b, which fires a second put,
// whose acknowledgment (counted on the MD's counter) fires a third. A triggered put
// whose counter is cancelled never fires.
func triggeredChain(ctx context.Context, b bootstrap.Bootstrap, p *portals.Process) error {
	ni, q, err := logicalNI(p, 0)
	if err != nil {
		return err
	}
	if b.Rank() == 1 {
		buf := make([]byte, 64)
		if _, err := ni.MEAppend(0, portals.MESpec{Start: buf, UID: portals.UIDAny,
			Options: portals.MEOpPut | portals.MEManageLocal | portals.MEEventLinkDisable,
			MatchID: portals.ProcessID{Rank: portals.RankAny}, MatchBits: 3}, portals.PriorityList, 0); err != nil {
			return err
		}
		if err := b.Barrier(ctx); err != nil {
			return err
		}
		for i := 0; i < 3; i++ {
			ev, err := expectEvent(ctx, q, eq.EventPut)
			if err != nil {
				return fmt.Errorf("triggered put %d: %w", i, err)
			}
			if ev.HdrData != uint64(i+1) {
				return fmt.Errorf("put %d carries hdr_data %d: the chain fired out of order", i, ev.HdrData)
			}
		}
		if !bytes.Equal(buf[:12], []byte{1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3}) {
			return fmt.Errorf("target holds % x", buf[:12])
		}
		if err := b.Barrier(ctx); err != nil { // rank 0 cancelled and sent its sentinel
			return err
		}
		ev, err := expectEvent(ctx, q, eq.EventPut)
		if err != nil {
			return err
		}
		if ev.HdrData != 99 {
			return fmt.Errorf("after the cancelled trigger: hdr_data %d, want only the sentinel (99)", ev.HdrData)
		}
		return b.Barrier(ctx)
	}
	ctMD, err := ni.CTAlloc()
	if err != nil {
		return err
	}
	a, err := ni.CTAlloc()
	if err != nil {
		return err
	}
	c2, err := ni.CTAlloc()
	if err != nil {
		return err
	}
	src := []byte{1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 9, 9, 9, 9}
	m, err := ni.MDBind(portals.MDSpec{Start: src, CT: ctMD, Options: portals.MDEventCTAck})
	if err != nil {
		return err
	}
	t1 := portals.ProcessID{Rank: 1}
	if err := b.Barrier(ctx); err != nil {
		return err
	}
	// a=1 -> put 1 and c2+=1; c2=1 -> put 2; first ack on the MD counter (ctMD=1)
	// after put 1 -> nothing; ctMD=2 -> put 3.
	if err := portals.TriggeredPut(m, 0, 4, portals.CTAckReq, t1, 0, 3, 0, 0, 1, a, 1); err != nil {
		return err
	}
	if err := portals.TriggeredCTInc(c2, portals.CTEvent{Success: 1}, a, 1); err != nil {
		return err
	}
	if err := portals.TriggeredPut(m, 4, 4, portals.CTAckReq, t1, 0, 3, 0, 0, 2, c2, 1); err != nil {
		return err
	}
	if err := portals.TriggeredPut(m, 8, 4, portals.CTAckReq, t1, 0, 3, 0, 0, 3, ctMD, 2); err != nil {
		return err
	}
	if err := a.Inc(portals.CTEvent{Success: 1}); err != nil {
		return err
	}
	v, err := ctMD.Wait(ctx, 3)
	if err != nil {
		return fmt.Errorf("waiting for three acknowledgments: %w", err)
	}
	if v.Success != 3 || v.Failure != 0 {
		return fmt.Errorf("MD counter %+v, want 3 successes", v)
	}
	// Cancel: a triggered put on a counter that is cancelled, then reaches its threshold.
	dead, err := ni.CTAlloc()
	if err != nil {
		return err
	}
	if err := portals.TriggeredPut(m, 12, 4, portals.NoAckReq, t1, 0, 3, 0, 0, 77, dead, 1); err != nil {
		return err
	}
	if err := dead.CancelTriggered(); err != nil {
		return err
	}
	if err := dead.Inc(portals.CTEvent{Success: 1}); err != nil {
		return err
	}
	if err := portals.Put(m, 12, 4, portals.CTAckReq, t1, 0, 3, 0, 0, 99); err != nil {
		return err
	}
	if _, err := ctMD.Wait(ctx, 4); err != nil {
		return err
	}
	if err := b.Barrier(ctx); err != nil {
		return err
	}
	if err := b.Barrier(ctx); err != nil {
		return err
	}
	for _, c := range []*portals.CT{dead, a, c2} {
		if err := c.Free(); err != nil {
			return err
		}
	}
	if err := m.Release(); errors.Is(err, portals.InUse) {
		return fmt.Errorf("MD still in use after every acknowledgment: %w", err)
	} else if err != nil {
		return err
	}
	return ctMD.Free()
}
