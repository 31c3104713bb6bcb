package portals_test

import (
	"context"
	"encoding/binary"
	"errors"
	"testing"
	"time"

	"github.com/goportals/goportals/portals"
)

// self brings up a matching physical NI with one portal table entry whose match
// entry exposes mem, and returns the NI, an event queue, the PT and this process's id.
func self(t *testing.T, mem []byte) (*portals.NI, *portals.EQ, *portals.PT, portals.ProcessID) {
	t.Helper()
	if err := portals.Init(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(portals.Fini)
	ni, err := portals.NIInit(portals.IfaceDefault, portals.NIMatching|portals.NIPhysical, portals.PIDAny, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ni.Fini() })
	q, err := ni.EQAlloc(64)
	if err != nil {
		t.Fatal(err)
	}
	pt, err := ni.PTAlloc(0, q, portals.PTAny)
	if err != nil {
		t.Fatal(err)
	}
	me := portals.MESpec{Start: mem, UID: portals.UIDAny, Options: portals.MEOpPut | portals.MEOpGet,
		MatchID: portals.ProcessID{NID: portals.NIDAny, PID: portals.PIDAny}, MatchBits: 7}
	if _, err := pt.Append(me, portals.PriorityList, 99); err != nil {
		t.Fatal(err)
	}
	id, err := ni.PhysID()
	if err != nil {
		t.Fatal(err)
	}
	return ni, q, pt, id
}

func wait(t *testing.T, q *portals.EQ, kind portals.EventKind) portals.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for ev, err := range q.Events(ctx) {
		if err != nil {
			t.Fatalf("waiting for %v: %v", kind, err)
		}
		if ev.NIFail != portals.NIOK {
			t.Fatalf("event %v failed: %v", ev.Type, ev.NIFail)
		}
		if ev.Type == kind {
			return ev
		}
	}
	t.Fatalf("no %v", kind)
	return portals.Event{}
}

func TestSpanPutGetAtomic(t *testing.T) {
	target := make([]byte, 64)
	ni, q, pt, id := self(t, target)
	src := []byte("hello, portals!!")
	m, err := ni.MDBind(portals.MDSpec{Start: src, EQ: q})
	if err != nil {
		t.Fatal(err)
	}
	to := portals.Target{ID: id, PT: pt.Index(), Match: 7, Offset: 8}
	if err := m.All().Put(to, portals.OpOptions{Ack: portals.AckReqFull, Cookie: 5, HdrData: 11}); err != nil {
		t.Fatal(err)
	}
	put := wait(t, q, portals.EventPut)
	if put.HdrData != 11 || put.UserPtr != 99 || put.MLength != uint64(len(src)) {
		t.Fatalf("put event %+v", put)
	}
	if ack := wait(t, q, portals.EventAck); ack.UserPtr != 5 {
		t.Fatalf("ack cookie %d", ack.UserPtr)
	}
	if string(target[8:8+len(src)]) != string(src) {
		t.Fatalf("target holds %q", target[8:8+len(src)])
	}

	back := make([]byte, len(src))
	gm, err := ni.MDBind(portals.MDSpec{Start: back, EQ: q})
	if err != nil {
		t.Fatal(err)
	}
	if err := gm.All().Get(to, portals.OpOptions{}); err != nil {
		t.Fatal(err)
	}
	wait(t, q, portals.EventReply)
	if string(back) != string(src) {
		t.Fatalf("got %q", back)
	}

	// Typed fetch-add on the first 8 bytes of the entry.
	binary.LittleEndian.PutUint64(target[0:], 40)
	ops := make([]byte, 16)
	binary.LittleEndian.PutUint64(ops, 2)
	am, err := ni.MDBind(portals.MDSpec{Start: ops, EQ: q})
	if err != nil {
		t.Fatal(err)
	}
	if err := portals.FetchAtomicOf[int64](am.Span(0, 8), am.Span(8, 8), portals.Target{ID: id, PT: pt.Index(), Match: 7},
		portals.OpSum, portals.OpOptions{}); err != nil {
		t.Fatal(err)
	}
	wait(t, q, portals.EventReply)
	if old, now := binary.LittleEndian.Uint64(ops[8:]), binary.LittleEndian.Uint64(target); old != 40 || now != 42 {
		t.Fatalf("fetch-add: old %d now %d", old, now)
	}
	// Compare-and-swap through SwapOf: 42 -> 7.
	binary.LittleEndian.PutUint64(ops, 7)
	if err := portals.SwapOf[uint64](am.Span(0, 8), am.Span(8, 8), portals.Target{ID: id, PT: pt.Index(), Match: 7},
		portals.OpCSwap, 42, portals.OpOptions{}); err != nil {
		t.Fatal(err)
	}
	wait(t, q, portals.EventReply)
	if now := binary.LittleEndian.Uint64(target); now != 7 {
		t.Fatalf("cswap left %d", now)
	}
}

func TestTriggeredPutOption(t *testing.T) {
	target := make([]byte, 8)
	ni, q, pt, id := self(t, target)
	ct, err := ni.CTAlloc()
	if err != nil {
		t.Fatal(err)
	}
	m, err := ni.MDBind(portals.MDSpec{Start: []byte("trigger!"), EQ: q})
	if err != nil {
		t.Fatal(err)
	}
	o := portals.OpOptions{Trigger: portals.Trigger{CT: ct, Threshold: 2}}
	if err := m.All().Put(portals.Target{ID: id, PT: pt.Index(), Match: 7}, o); err != nil {
		t.Fatal(err)
	}
	if err := ct.Inc(portals.CTEvent{Success: 1}); err != nil {
		t.Fatal(err)
	}
	for {
		ev, err := q.Get()
		if err != nil {
			break
		}
		if ev.Type != portals.EventLink {
			t.Fatalf("triggered put ran below its threshold: %v", ev.Type)
		}
	}
	if err := ct.Inc(portals.CTEvent{Success: 1}); err != nil {
		t.Fatal(err)
	}
	wait(t, q, portals.EventPut)
	if string(target) != "trigger!" {
		t.Fatalf("target %q", target)
	}
}

func TestNilHandles(t *testing.T) {
	var ni *portals.NI
	if _, err := ni.EQAlloc(1); !errors.Is(err, portals.NoInit) {
		t.Fatalf("EQAlloc on nil NI before Init: %v, want NO_INIT", err)
	}
	if err := portals.Init(); err != nil {
		t.Fatal(err)
	}
	defer portals.Fini()
	if _, err := ni.EQAlloc(1); !errors.Is(err, portals.ArgInvalid) {
		t.Fatalf("EQAlloc on nil NI: %v", err)
	}
	var m *portals.MD
	err := m.Span(0, 1).Put(portals.Target{}, portals.OpOptions{})
	var oe *portals.OpError
	if !errors.As(err, &oe) || !errors.Is(err, portals.ArgInvalid) {
		t.Fatalf("Put on nil MD: %v", err)
	}
	var pt *portals.PT
	if _, err := pt.Append(portals.MESpec{}, portals.PriorityList, 0); !errors.Is(err, portals.ArgInvalid) {
		t.Fatalf("Append on nil PT: %v", err)
	}
	var c *portals.CT
	if err := c.Inc(portals.CTEvent{}); !errors.Is(err, portals.ArgInvalid) {
		t.Fatalf("Inc on nil CT: %v", err)
	}
	// A zero handle value names nothing: refused in calls and in specs alike.
	if err := (&portals.CT{}).Inc(portals.CTEvent{}); !errors.Is(err, portals.ArgInvalid) {
		t.Fatalf("Inc on a zero CT: %v", err)
	}
	if _, err := (&portals.EQ{}).Get(); !errors.Is(err, portals.ArgInvalid) {
		t.Fatalf("Get on a zero EQ: %v", err)
	}
	real, err := portals.NIInit(portals.IfaceDefault, portals.NIMatching|portals.NIPhysical, portals.PIDAny, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer real.Fini()
	if _, err := real.MDBind(portals.MDSpec{Start: make([]byte, 8), EQ: &portals.EQ{}}); !errors.Is(err, portals.ArgInvalid) {
		t.Fatalf("MDBind with a zero EQ: %v", err)
	}
	if _, err := real.MDBind(portals.MDSpec{Start: make([]byte, 8), CT: &portals.CT{}}); !errors.Is(err, portals.ArgInvalid) {
		t.Fatalf("MDBind with a zero CT: %v", err)
	}
}

type counter int32
type amount float64
type cplx complex64

func TestDatatype(t *testing.T) {
	cases := []struct {
		got, want portals.AtomicType
	}{
		{portals.Datatype[int8](), portals.Int8}, {portals.Datatype[uint8](), portals.Uint8},
		{portals.Datatype[int16](), portals.Int16}, {portals.Datatype[uint16](), portals.Uint16},
		{portals.Datatype[int32](), portals.Int32}, {portals.Datatype[uint32](), portals.Uint32},
		{portals.Datatype[int64](), portals.Int64}, {portals.Datatype[uint64](), portals.Uint64},
		{portals.Datatype[int](), portals.Int64}, {portals.Datatype[uint](), portals.Uint64},
		{portals.Datatype[float32](), portals.Float}, {portals.Datatype[float64](), portals.Double},
		{portals.Datatype[complex64](), portals.FloatComplex}, {portals.Datatype[complex128](), portals.DoubleComplex},
		{portals.Datatype[counter](), portals.Int32}, {portals.Datatype[amount](), portals.Double},
		{portals.Datatype[cplx](), portals.FloatComplex},
	}
	for i, c := range cases {
		if c.got != c.want {
			t.Errorf("case %d: %v, want %v", i, c.got, c.want)
		}
	}
}

func TestHandlesCompare(t *testing.T) {
	_, _, pt, _ := self(t, make([]byte, 8))
	again, ok := pt.NI().PT(pt.Index())
	if !ok || again != pt {
		t.Fatal("the PT handle of an index is not the one PTAlloc returned")
	}
	ni2, err := portals.NIInit(portals.IfaceDefault, portals.NIMatching|portals.NIPhysical, portals.PIDAny, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ni2.Fini()
	if ni2 != pt.NI() {
		t.Fatal("a second NIInit of the same interface returned another handle")
	}
}
