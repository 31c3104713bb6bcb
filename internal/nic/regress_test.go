package nic

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/goportals/goportals/eq"
)

// a triggered put whose MD is released before the trigger fires vanishes: MDRelease
// succeeds although an operation on the MD is pending, and the op produces no event.
func TestRegressionTriggeredAfterMDRelease(t *testing.T) {
	nis := newNIs(t, 2, NIMatching|NIPhysical)
	init, tgt := nis[0], nis[1]
	tbuf, tq, _ := target(t, tgt, 64)
	iq, err := init.EQAlloc(16)
	if err != nil {
		t.Fatal(err)
	}
	trig, err := init.CTAlloc()
	if err != nil {
		t.Fatal(err)
	}
	src := make([]byte, 8)
	fill(src, 3)
	m, err := init.MDBind(MDSpec{Start: src, EQ: iq, Options: MDEventSendDisable})
	if err != nil {
		t.Fatal(err)
	}
	dst, err := tgt.PhysID()
	if err != nil {
		t.Fatal(err)
	}
	if err := TriggeredPut(m, 0, 8, AckReqFull, dst, 4, 0x42, 0, 0, 0, trig, 1); err != nil {
		t.Fatal(err)
	}
	if err := m.Release(); !errors.Is(err, InUse) {
		t.Errorf("MDRelease with a pending triggered put: %v, want IN_USE", err)
	}
	if err := trig.Inc(CTEvent{Success: 1}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ev, err := iq.Wait(ctx)
	if err != nil {
		t.Fatalf("triggered put produced no initiator event: %v", err)
	}
	if ev.Type != eq.EventAck || ev.NIFail != eq.NIOK || ev.MLength != 8 {
		t.Fatalf("initiator event %+v, want ACK, NI_OK, mlength 8", ev)
	}
	if ev := waitEvent(t, tq); ev.Type != eq.EventPut || !bytes.Equal(tbuf[:8], src) {
		t.Fatalf("target event %+v, data %x, want PUT of %x", ev, tbuf[:8], src)
	}
	if err := m.Release(); err != nil {
		t.Errorf("MDRelease after the triggered put completed: %v", err)
	}
}

// ni.check reads ni.dead without ni.mu while shutdown writes it under ni.mu. The
// reader runs from before Fini until it sees the NI finalized, so the two overlap.
func TestRegressionCheckRacesFini(t *testing.T) {
	nis := newNIs(t, 1, NIMatching|NIPhysical)
	ni := nis[0]
	started := make(chan struct{})
	res := make(chan error, 1)
	go func() {
		deadline := time.Now().Add(20 * time.Second)
		for i := 0; ; i++ {
			_, err := ni.Status(SRDropCount)
			if i == 0 {
				close(started)
			}
			if err != nil || time.Now().After(deadline) {
				res <- err
				return
			}
		}
	}()
	<-started
	if err := ni.Fini(); err != nil {
		t.Fatal(err)
	}
	if err := <-res; !errors.Is(err, ArgInvalid) {
		t.Fatalf("Status on a finalized NI: %v, want ARG_INVALID", err)
	}
}

// peerFailed fails an op in the ops map; the issuing goroutine then sees
// errPeerFailed and fails it a second time: duplicate REPLY event, failure counted twice.
func TestRegressionDoubleFail(t *testing.T) {
	nis := newNIs(t, 2, NIMatching|NIPhysical)
	init := nis[0]
	iq, err := init.EQAlloc(16)
	if err != nil {
		t.Fatal(err)
	}
	ct, err := init.CTAlloc()
	if err != nil {
		t.Fatal(err)
	}
	m, err := init.MDBind(MDSpec{Start: make([]byte, 8), EQ: iq, CT: ct, Options: MDEventCTReply})
	if err != nil {
		t.Fatal(err)
	}
	pr := mustPeer(t, init, nis[1])
	// The interleaving of start (op registered) / peerFailed / issueOrFail.
	init.mu.Lock()
	init.nextOp++
	o := &initOp{id: init.nextOp, kind: msgGet, md: m, length: 8, pr: pr, tracked: true}
	m.inflight++
	init.ops[o.id] = o
	init.mu.Unlock()
	init.peerFailed(pr)
	if err := init.issueOrFail("PtlGet", o, nil); err != nil {
		t.Fatal(err)
	}
	if v, err := ct.Get(); err != nil || v.Failure != 1 || v.Success != 0 {
		t.Errorf("counter %+v (%v) after one failed get, want Failure 1", v, err)
	}
	var evs []Event
	for {
		ev, err := iq.Get()
		if errors.Is(err, EQEmpty) {
			break
		}
		if err != nil {
			t.Fatalf("EQ.Get: %v", err)
		}
		evs = append(evs, ev)
	}
	if len(evs) != 1 || evs[0].Type != eq.EventReply || evs[0].NIFail != eq.NIUndeliverable {
		t.Errorf("events %+v for one failed get, want one REPLY with UNDELIVERABLE", evs)
	}
}

// a malicious/buggy REPLY longer than the get writes past [localOff, localOff+length).
func TestRegressionReplyOverrun(t *testing.T) {
	nis := newNIs(t, 2, NIMatching|NIPhysical)
	init := nis[0]
	buf := make([]byte, 64)
	m, err := init.MDBind(MDSpec{Start: buf})
	if err != nil {
		t.Fatal(err)
	}
	pr := mustPeer(t, init, nis[1])
	init.mu.Lock()
	init.nextOp++
	o := &initOp{id: init.nextOp, kind: msgGet, md: m, length: 8, pr: pr}
	m.inflight++
	init.ops[o.id] = o
	init.mu.Unlock()
	payload := make([]byte, 64)
	for i := range payload {
		payload[i] = 0xee
	}
	init.handleAnswer(o.pr, &header{kind: msgReply, opid: o.id, mlength: 64}, payload)
	if !bytes.Equal(buf[8:], make([]byte, 56)) {
		t.Errorf("reply of a get of 8 bytes wrote past byte 8: %x", buf)
	}
}

// flow control with a full EQ: the message that finds the EQ full is not
// delivered (no data written, no event of its own); the PT is disabled, the
// target gets PT_DISABLED in the reserved slot and the initiator an ACK with
// PT_DISABLED.
func TestRegressionFlowCtrlEQFull(t *testing.T) {
	nis := newNIs(t, 2, NIMatching|NIPhysical)
	init, tgt := nis[0], nis[1]
	q, err := tgt.EQAlloc(1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tgt.PTAlloc(PTFlowCtrl, q, 5); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 8)
	if _, err := tgt.MEAppend(5, MESpec{Start: buf, UID: UIDAny, Options: MEOpPut | MEEventLinkDisable,
		MatchID: ProcessID{NID: NIDAny, PID: PIDAny}, MatchBits: 1}, PriorityList, 0); err != nil {
		t.Fatal(err)
	}
	if a := putAndAck(t, init, tgt, 5, 1); a.Type != eq.EventAck || a.NIFail != eq.NIOK {
		t.Fatalf("first put %+v", a)
	}
	// EQ now full (1 of 1). The puts carry zeros: mark the buffer to see a write.
	for i := range buf {
		buf[i] = 0xff
	}
	a := putAndAck(t, init, tgt, 5, 1)
	if a.Type != eq.EventAck || a.NIFail != eq.NIPTDisabled {
		t.Errorf("put that found the EQ full acked %v %v, want ACK with PT_DISABLED", a.Type, a.NIFail)
	}
	if !bytes.Equal(buf, bytes.Repeat([]byte{0xff}, 8)) {
		t.Errorf("the put that found the EQ full wrote %x", buf)
	}
	var kinds []eq.EventKind
	for {
		ev, err := q.Get()
		if errors.Is(err, EQEmpty) {
			break
		}
		if err != nil {
			t.Fatalf("EQ.Get: %v", err)
		}
		kinds = append(kinds, ev.Type)
	}
	if want := []eq.EventKind{eq.EventPut, eq.EventPTDisabled}; !slices.Equal(kinds, want) {
		t.Errorf("target events %v, want %v", kinds, want)
	}
}

// long put / long get that match a zero-length entry: both complete OK with
// mlength 0, on both sides.
func TestRegressionLongZeroMLength(t *testing.T) {
	nis := newNIs(t, 2, NIMatching|NIPhysical)
	init, tgt := nis[0], nis[1]
	q, err := tgt.EQAlloc(16)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tgt.PTAlloc(0, q, 5); err != nil {
		t.Fatal(err)
	}
	if _, err := tgt.MEAppend(5, MESpec{Start: []byte{}, UID: UIDAny, Options: MEOpPut | MEOpGet | MEEventLinkDisable,
		MatchID: ProcessID{NID: NIDAny, PID: PIDAny}, MatchBits: 1}, PriorityList, 0); err != nil {
		t.Fatal(err)
	}
	iq, err := init.EQAlloc(16)
	if err != nil {
		t.Fatal(err)
	}
	m, err := init.MDBind(MDSpec{Start: make([]byte, 4096), EQ: iq})
	if err != nil {
		t.Fatal(err)
	}
	dst, err := tgt.PhysID()
	if err != nil {
		t.Fatal(err)
	}
	if err := Put(m, 0, 4096, AckReqFull, dst, 5, 1, 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	if ev := waitEvent(t, iq); ev.Type != eq.EventSend || ev.NIFail != eq.NIOK {
		t.Errorf("put: first event %v %v, want SEND OK", ev.Type, ev.NIFail)
	}
	if ev := waitEvent(t, iq); ev.Type != eq.EventAck || ev.NIFail != eq.NIOK || ev.MLength != 0 {
		t.Errorf("put: second event %v %v mlength %d, want ACK OK mlength 0", ev.Type, ev.NIFail, ev.MLength)
	}
	if ev := waitEvent(t, q); ev.Type != eq.EventPut || ev.NIFail != eq.NIOK || ev.RLength != 4096 || ev.MLength != 0 {
		t.Errorf("target put event %v %v rlength %d mlength %d", ev.Type, ev.NIFail, ev.RLength, ev.MLength)
	}
	if err := Get(m, 0, 4096, dst, 5, 1, 0, 0); err != nil {
		t.Fatal(err)
	}
	if ev := waitEvent(t, iq); ev.Type != eq.EventReply || ev.NIFail != eq.NIOK || ev.MLength != 0 {
		t.Errorf("get: event %v %v mlength %d, want REPLY OK mlength 0", ev.Type, ev.NIFail, ev.MLength)
	}
	if ev := waitEvent(t, q); ev.Type != eq.EventGet || ev.NIFail != eq.NIOK || ev.RLength != 4096 || ev.MLength != 0 {
		t.Errorf("target get event %v %v rlength %d mlength %d", ev.Type, ev.NIFail, ev.RLength, ev.MLength)
	}
	if err := m.Release(); err != nil {
		t.Errorf("release: %v", err)
	}
}
