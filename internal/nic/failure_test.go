package nic

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/goportals/goportals/eq"
)

// putAndAck puts 8 bytes with a full ack and returns the initiator's ACK event.
func putAndAck(t *testing.T, init, tgt *NI, pt PTIndex, match uint64) Event {
	t.Helper()
	iq, err := init.EQAlloc(16)
	if err != nil {
		t.Fatal(err)
	}
	src := make([]byte, 8)
	m, err := init.MDBind(MDSpec{Start: src, EQ: iq, Options: MDEventSendDisable})
	if err != nil {
		t.Fatal(err)
	}
	dst, err := tgt.PhysID()
	if err != nil {
		t.Fatal(err)
	}
	if err := Put(m, 0, 8, AckReqFull, dst, pt, match, 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	return waitEvent(t, iq)
}

func TestFlowControlDisablesPT(t *testing.T) {
	nis := newNIs(t, 2, NIMatching|NIPhysical)
	init, tgt := nis[0], nis[1]
	q, err := tgt.EQAlloc(8)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tgt.PTAlloc(PTFlowCtrl, q, 5); err != nil {
		t.Fatal(err)
	}
	// No entry: the message finds no resources.
	ack := putAndAck(t, init, tgt, 5, 1)
	if ack.Type != eq.EventAck || ack.NIFail != eq.NIPTDisabled {
		t.Fatalf("initiator event %+v, want ACK with PT_DISABLED", ack)
	}
	if ev := waitEvent(t, q); ev.Type != eq.EventPTDisabled {
		t.Fatalf("target event %+v, want PT_DISABLED", ev)
	}
	// Disabled now: even a matching entry is not used until re-enabled.
	buf := make([]byte, 8)
	if _, err := tgt.MEAppend(5, MESpec{Start: buf, UID: UIDAny, Options: MEOpPut | MEEventLinkDisable,
		MatchID: ProcessID{NID: NIDAny, PID: PIDAny}, MatchBits: 1}, PriorityList, 0); err != nil {
		t.Fatal(err)
	}
	if ack := putAndAck(t, init, tgt, 5, 1); ack.NIFail != eq.NIPTDisabled {
		t.Fatalf("put to a disabled PT: %+v", ack)
	}
	if err := tgt.PTEnable(5); err != nil {
		t.Fatal(err)
	}
	if ack := putAndAck(t, init, tgt, 5, 1); ack.NIFail != eq.NIOK {
		t.Fatalf("put after re-enable: %+v", ack)
	}
}

func TestViolations(t *testing.T) {
	nis := newNIs(t, 2, NIMatching|NIPhysical)
	init, tgt := nis[0], nis[1]
	q, err := tgt.EQAlloc(16)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tgt.PTAlloc(0, q, 6); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 8)
	// Get-only entry: a put is an operation violation.
	if _, err := tgt.MEAppend(6, MESpec{Start: buf, UID: UIDAny, Options: MEOpGet | MEEventLinkDisable,
		MatchID: ProcessID{NID: NIDAny, PID: PIDAny}, MatchBits: 2}, PriorityList, 0); err != nil {
		t.Fatal(err)
	}
	if ack := putAndAck(t, init, tgt, 6, 2); ack.NIFail != eq.NIOpViolation {
		t.Fatalf("put on a get-only entry: %+v", ack)
	}
	// Entry for another user: permission violation.
	if _, err := tgt.MEAppend(6, MESpec{Start: buf, UID: 12345, Options: MEOpPut | MEEventLinkDisable,
		MatchID: ProcessID{NID: NIDAny, PID: PIDAny}, MatchBits: 3}, PriorityList, 0); err != nil {
		t.Fatal(err)
	}
	if ack := putAndAck(t, init, tgt, 6, 3); ack.NIFail != eq.NIPermViolation {
		t.Fatalf("put to another user's entry: %+v", ack)
	}
	// No match on a PT without flow control: dropped.
	if ack := putAndAck(t, init, tgt, 6, 99); ack.NIFail != eq.NIDropped {
		t.Fatalf("unmatched put: %+v", ack)
	}
	for sr, want := range map[SR]uint64{SROperationsViolations: 1, SRPermissionsViolations: 1, SRDropCount: 1} {
		if v, err := tgt.Status(sr); err != nil || v != want {
			t.Errorf("status register %d = %d (%v), want %d", sr, v, err, want)
		}
	}
}

func TestTruncation(t *testing.T) {
	nis := newNIs(t, 2, NIMatching|NIPhysical)
	init, tgt := nis[0], nis[1]
	q, err := tgt.EQAlloc(16)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tgt.PTAlloc(0, q, 7); err != nil {
		t.Fatal(err)
	}
	small := make([]byte, 4)
	if _, err := tgt.MEAppend(7, MESpec{Start: small, UID: UIDAny, Options: MEOpPut | MEEventLinkDisable,
		MatchID: ProcessID{NID: NIDAny, PID: PIDAny}, MatchBits: 1}, PriorityList, 0); err != nil {
		t.Fatal(err)
	}
	ack := putAndAck(t, init, tgt, 7, 1)
	if ack.NIFail != eq.NIOK || ack.MLength != 4 {
		t.Fatalf("truncated put ack %+v, want mlength 4", ack)
	}
	if ev := waitEvent(t, q); ev.Type != eq.EventPut || ev.RLength != 8 || ev.MLength != 4 {
		t.Fatalf("target event %+v", ev)
	}
}

func TestNonMatchingLogicalNI(t *testing.T) {
	nis := newNIs(t, 2, NINoMatching|NILogical)
	init, tgt := nis[0], nis[1]
	q, err := tgt.EQAlloc(16)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tgt.PTAlloc(0, q, 1); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 16)
	if _, err := tgt.MEAppend(1, MESpec{Start: buf}, PriorityList, 0); err == nil {
		t.Fatal("MEAppend on a non-matching NI succeeded")
	}
	if _, err := tgt.LEAppend(1, LESpec{Start: buf, UID: UIDAny, Options: MEOpPut | MEEventLinkDisable}, PriorityList, 3); err != nil {
		t.Fatal(err)
	}
	iq, err := init.EQAlloc(16)
	if err != nil {
		t.Fatal(err)
	}
	src := []byte("logical-put-16by")
	m, err := init.MDBind(MDSpec{Start: src, EQ: iq, Options: MDEventSendDisable})
	if err != nil {
		t.Fatal(err)
	}
	if err := Put(m, 0, 16, AckReqFull, ProcessID{Rank: 1}, 1, 0, 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	if ev := waitEvent(t, iq); ev.Type != eq.EventAck || ev.NIFail != eq.NIOK {
		t.Fatalf("ack %+v", ev)
	}
	ev := waitEvent(t, q)
	if ev.Type != eq.EventPut || ev.Initiator.Rank != 0 || string(buf) != string(src) {
		t.Fatalf("target %+v %q", ev, buf)
	}
}

func TestArgumentErrors(t *testing.T) {
	nis := newNIs(t, 1, NIMatching|NIPhysical)
	ni := nis[0]
	if _, err := ni.PTAlloc(PTFlowCtrl, nil, 0); !errors.Is(err, PTEQNeeded) {
		t.Errorf("flow control without EQ: %v", err)
	}
	if _, err := ni.PTAlloc(0, nil, 3); err != nil {
		t.Fatalf("first alloc of index 3: %v", err)
	}
	if _, err := ni.PTAlloc(0, nil, 3); !errors.Is(err, PTInUse) {
		t.Errorf("second alloc of index 3: %v", err)
	}
	var oe *OpError
	if _, err := ni.PTAlloc(0, nil, 10000); !errors.As(err, &oe) || oe.Errno != ArgInvalid {
		t.Errorf("index above max: %v", err)
	}
	m, err := ni.MDBind(MDSpec{Start: make([]byte, 8)})
	if err != nil {
		t.Fatal(err)
	}
	self, err := ni.PhysID()
	if err != nil {
		t.Fatal(err)
	}
	if err := Put(m, 0, 8, NoAckReq, self, 3, 0, 0, 0, 0); err != nil {
		t.Fatalf("put to self: %v", err)
	}
	if err := m.Release(); err != nil && !errors.Is(err, InUse) {
		t.Errorf("release: %v", err)
	}
	if _, err := NIInit(IfaceDefault, NIMatching|NIPhysical, PIDAny, nil); !errors.Is(err, NoInit) {
		t.Errorf("NIInit before Init: %v", err)
	}
}

// TestNoKeysExported checks that no exported type of the package carries a memory
// key or registration: the point of Portals over verbs.
func TestNoKeysExported(t *testing.T) {
	for _, v := range []any{MD{}, ME{}, NI{}, EQ{}, CT{}, MDSpec{}, MESpec{}, LESpec{}, Event{}, Limits{}} {
		typ := reflect.TypeOf(v)
		for i := 0; i < typ.NumField(); i++ {
			f := typ.Field(i)
			name := strings.ToLower(f.Name)
			if f.IsExported() && (strings.Contains(name, "key") || strings.Contains(name, "mr") || strings.Contains(name, "reg")) {
				t.Errorf("%s.%s is exported", typ.Name(), f.Name)
			}
		}
	}
}

// TestDeadPeer finalizes the target's NI; the initiator's next put with an ack
// completes with NI_UNDELIVERABLE instead of hanging.
func TestDeadPeer(t *testing.T) {
	nis := newNIs(t, 2, NIMatching|NIPhysical)
	init, tgt := nis[0], nis[1]
	dst, err := tgt.PhysID()
	if err != nil {
		t.Fatal(err)
	}
	if err := tgt.Fini(); err != nil {
		t.Fatal(err)
	}
	iq, err := init.EQAlloc(16)
	if err != nil {
		t.Fatal(err)
	}
	m, err := init.MDBind(MDSpec{Start: make([]byte, 8), EQ: iq, Options: MDEventSendDisable})
	if err != nil {
		t.Fatal(err)
	}
	if err := Put(m, 0, 8, AckReqFull, dst, 0, 0, 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	if ev := waitEvent(t, iq); ev.Type != eq.EventAck || ev.NIFail != eq.NIUndeliverable {
		t.Fatalf("event %+v, want ACK with UNDELIVERABLE", ev)
	}
	gm, err := init.MDBind(MDSpec{Start: make([]byte, 4096), EQ: iq})
	if err != nil {
		t.Fatal(err)
	}
	if err := Get(gm, 0, 4096, dst, 0, 0, 0, 0); err == nil {
		if ev := waitEvent(t, iq); ev.Type != eq.EventReply || ev.NIFail != eq.NIUndeliverable {
			t.Fatalf("get event %+v, want REPLY with UNDELIVERABLE", ev)
		}
	} else if ErrnoOf(err) != Fail {
		t.Fatalf("get to a dead peer: %v", err)
	}
}

// TestZeroHandles: zero-value handles name no object; every call refuses them.
func TestZeroHandles(t *testing.T) {
	nis := newNIs(t, 1, NIMatching|NIPhysical)
	ni := nis[0]
	checks := map[string]error{
		"EQ.Get":    func() error { _, err := (&EQ{}).Get(); return err }(),
		"EQ.Free":   (&EQ{}).Free(),
		"CT.Get":    func() error { _, err := (&CT{}).Get(); return err }(),
		"CT.Inc":    (&CT{}).Inc(CTEvent{Success: 1}),
		"MD.Free":   (&MD{}).Release(),
		"ME.Unlink": (&ME{}).Unlink(),
		"MDBind":    func() error { _, err := ni.MDBind(MDSpec{Start: make([]byte, 8), EQ: &EQ{}}); return err }(),
		"PTAlloc":   func() error { _, err := ni.PTAlloc(0, &EQ{}, PTAny); return err }(),
		"CTInc":     TriggeredCTInc(&CT{}, CTEvent{Success: 1}, &CT{}, 1),
		"Put":       Put(&MD{}, 0, 0, NoAckReq, ProcessID{}, 0, 0, 0, 0, 0),
		"NIHandle":  func() error { _, err := NIHandle(&CT{}); return err }(),
	}
	for name, err := range checks {
		if !errors.Is(err, ArgInvalid) {
			t.Errorf("%s: %v, want ARG_INVALID", name, err)
		}
	}
}
