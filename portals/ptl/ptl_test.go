package ptl_test

import (
	"errors"
	"testing"

	"github.com/goportals/goportals/portals"
	"github.com/goportals/goportals/portals/ptl"
)

// TestMirrorPutByIndex runs the C-shaped sequence: PTAlloc by index, MEAppend by
// index, PtlPut with positional arguments, PtlEQWait, then frees by index.
func TestMirrorPutByIndex(t *testing.T) {
	if err := ptl.Init(); err != nil {
		t.Fatal(err)
	}
	defer ptl.Fini()
	ni, lim, err := ptl.NIInit(portals.IfaceDefault, portals.NIMatching|portals.NIPhysical, portals.PIDAny, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ptl.NIFini(ni)
	if lim.MaxPTIndex <= 0 {
		t.Fatalf("limits %+v", lim)
	}
	q, err := ptl.EQAlloc(ni, 16)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := ptl.PTAlloc(ni, 0, q, 5)
	if err != nil || idx != 5 {
		t.Fatalf("PTAlloc: %d %v", idx, err)
	}
	buf := make([]byte, 4)
	me, err := ptl.MEAppend(ni, idx, portals.MESpec{Start: buf, UID: portals.UIDAny, Options: portals.MEOpPut,
		MatchID: portals.ProcessID{NID: portals.NIDAny, PID: portals.PIDAny}}, portals.PriorityList, 0)
	if err != nil {
		t.Fatal(err)
	}
	if h, err := ptl.NIHandle(me); err != nil || !ptl.HandleIsEqual(h, ni) {
		t.Fatalf("NIHandle(me) = %v, %v", h, err)
	}
	md, err := ptl.MDBind(ni, portals.MDSpec{Start: []byte("abcd"), EQ: q})
	if err != nil {
		t.Fatal(err)
	}
	self, err := ptl.GetPhysId(ni)
	if err != nil {
		t.Fatal(err)
	}
	if err := ptl.Put(md, 0, 4, portals.NoAckReq, self, idx, 0, 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	for {
		ev, err := ptl.EQWait(q)
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type == portals.EventPut {
			break
		}
	}
	if string(buf) != "abcd" {
		t.Fatalf("buf %q", buf)
	}
	if err := ptl.PTFree(ni, idx); !errors.Is(err, portals.PTInUse) {
		t.Fatalf("PTFree with an entry: %v", err)
	}
	if err := ptl.MEUnlink(me); err != nil {
		t.Fatal(err)
	}
	if err := ptl.PTFree(ni, idx); err != nil {
		t.Fatal(err)
	}
	if err := ptl.PTFree(ni, idx); !errors.Is(err, portals.ArgInvalid) {
		t.Fatalf("second PTFree: %v", err)
	}
	if err := ptl.TriggeredCTInc(nil, portals.CTEvent{}, nil, 0); !errors.Is(err, portals.ArgInvalid) {
		t.Fatalf("TriggeredCTInc(nil): %v", err)
	}
	for { // drain what the put left (its SEND may follow its PUT)
		if _, err := ptl.EQGet(q); errors.Is(err, portals.EQEmpty) {
			break
		}
	}
	if _, _, err := ptl.EQPoll([]*portals.EQ{q}, 0); !errors.Is(err, portals.EQEmpty) {
		t.Fatalf("EQPoll on an empty queue with timeout 0: %v", err)
	}
}
