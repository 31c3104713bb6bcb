package portals

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/goportals/goportals/eq"
)

// a triggered put whose MD is released before the trigger fires vanishes: MDRelease
// succeeds although an operation on the MD is pending, and the op produces no event.
func TestRegressionTriggeredAfterMDRelease(t *testing.T) {
	nis := newNIs(t, 2, NIMatching|NIPhysical)
	init, tgt := nis[0], nis[1]
	_, tq, _ := target(t, tgt, 64)
	iq, _ := init.EQAlloc(16)
	trig, _ := init.CTAlloc()
	m, _ := init.MDBind(MDSpec{Start: make([]byte, 8), EQ: iq, Options: MDEventSendDisable})
	dst, _ := tgt.PhysID()
	if err := TriggeredPut(m, 0, 8, AckReqFull, dst, 4, 0x42, 0, 0, 0, trig, 1); err != nil {
		t.Fatal(err)
	}
	if err := m.Release(); err == nil {
		t.Errorf("MDRelease with a pending triggered put succeeded (want InUse)")
	}
	trig.Inc(CTEvent{Success: 1})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if _, err := iq.Wait(ctx); err != nil {
		t.Fatalf("triggered put produced no initiator event: %v", err)
	}
	_ = tq
}

// ni.check reads ni.dead without ni.mu while shutdown writes it under ni.mu.
func TestRegressionCheckRacesFini(t *testing.T) {
	nis := newNIs(t, 1, NIMatching|NIPhysical)
	ni := nis[0]
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < 1000; i++ {
			ni.Status(SRDropCount)
		}
	}()
	ni.Fini()
	wg.Wait()
}

// peerFailed fails an op in the ops map; the issuing goroutine then sees
// errPeerFailed and fails it a second time: duplicate REPLY event, failure counted twice.
func TestRegressionDoubleFail(t *testing.T) {
	nis := newNIs(t, 2, NIMatching|NIPhysical)
	init := nis[0]
	iq, _ := init.EQAlloc(16)
	ct, _ := init.CTAlloc()
	m, _ := init.MDBind(MDSpec{Start: make([]byte, 8), EQ: iq, CT: ct, Options: MDEventCTReply})
	pr := init.peers[1]
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
	if v, _ := ct.Get(); v.Failure != 1 {
		t.Errorf("counter %+v after one failed get, want Failure 1", v)
	}
	n := 0
	for {
		if _, err := iq.Get(); err != nil {
			break
		}
		n++
	}
	if n != 1 {
		t.Errorf("%d REPLY events for one get, want 1", n)
	}
}

// a malicious/buggy REPLY longer than the get writes past [localOff, localOff+length).
func TestRegressionReplyOverrun(t *testing.T) {
	nis := newNIs(t, 2, NIMatching|NIPhysical)
	init := nis[0]
	buf := make([]byte, 64)
	m, _ := init.MDBind(MDSpec{Start: buf})
	init.mu.Lock()
	init.nextOp++
	o := &initOp{id: init.nextOp, kind: msgGet, md: m, length: 8, pr: init.peers[1]}
	m.inflight++
	init.ops[o.id] = o
	init.mu.Unlock()
	payload := make([]byte, 64)
	for i := range payload {
		payload[i] = 0xee
	}
	init.handleAnswer(init.peers[1], &header{kind: msgReply, opid: o.id, mlength: 64}, payload)
	if buf[8] != 0 {
		t.Errorf("reply of a get of 8 bytes wrote byte 8 and beyond")
	}
}

// flow control with a full EQ: the message that finds the EQ full is still
// delivered (data written, event posted) and acknowledged OK.
func TestRegressionFlowCtrlEQFull(t *testing.T) {
	nis := newNIs(t, 2, NIMatching|NIPhysical)
	init, tgt := nis[0], nis[1]
	q, _ := tgt.EQAlloc(1)
	tgt.PTAlloc(PTFlowCtrl, q, 5)
	buf := make([]byte, 8)
	tgt.MEAppend(5, MESpec{Start: buf, UID: UIDAny, Options: MEOpPut | MEEventLinkDisable,
		MatchID: ProcessID{NID: NIDAny, PID: PIDAny}, MatchBits: 1}, PriorityList, 0)
	if a := putAndAck(t, init, tgt, 5, 1); a.NIFail != eq.NIOK {
		t.Fatalf("first put %+v", a)
	}
	// EQ now full (1 of 1).
	a := putAndAck(t, init, tgt, 5, 1)
	if a.NIFail != eq.NIPTDisabled {
		t.Errorf("put that found the EQ full acked %v, want PT_DISABLED", a.NIFail)
	}
	var kinds []eq.EventKind
	for {
		ev, err := q.Get()
		if err != nil {
			break
		}
		kinds = append(kinds, ev.Type)
	}
	t.Logf("target events: %v", kinds)
}

// long put / long get that match a zero-length entry.
func TestRegressionLongZeroMLength(t *testing.T) {
	nis := newNIs(t, 2, NIMatching|NIPhysical)
	init, tgt := nis[0], nis[1]
	q, _ := tgt.EQAlloc(16)
	tgt.PTAlloc(0, q, 5)
	tgt.MEAppend(5, MESpec{Start: []byte{}, UID: UIDAny, Options: MEOpPut | MEOpGet | MEEventLinkDisable,
		MatchID: ProcessID{NID: NIDAny, PID: PIDAny}, MatchBits: 1}, PriorityList, 0)
	iq, _ := init.EQAlloc(16)
	m, _ := init.MDBind(MDSpec{Start: make([]byte, 4096), EQ: iq})
	dst, _ := tgt.PhysID()
	if err := Put(m, 0, 4096, AckReqFull, dst, 5, 1, 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		ev := waitEvent(t, iq)
		t.Logf("put: %v fail %v mlen %d", ev.Type, ev.NIFail, ev.MLength)
	}
	if err := Get(m, 0, 4096, dst, 5, 1, 0, 0); err != nil {
		t.Fatal(err)
	}
	ev := waitEvent(t, iq)
	t.Logf("get: %v fail %v mlen %d", ev.Type, ev.NIFail, ev.MLength)
	if err := m.Release(); err != nil {
		t.Errorf("release: %v", err)
	}
}
