package portals_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/goportals/goportals/portals"
)

// TestOnUnlink: MESpec.OnUnlink runs once when the engine unlinks a use-once
// entry (with its AUTO_UNLINK event disabled, as Open MPI's receives do), and
// not for an entry unlinked by Unlink.
func TestOnUnlink(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := portals.Init(); err != nil {
		t.Fatal(err)
	}
	defer portals.Fini()
	ni, err := portals.NIInit(portals.IfaceDefault, portals.NIMatching|portals.NIPhysical, portals.PIDAny, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ni.Fini()
	ct, err := ni.CTAlloc()
	if err != nil {
		t.Fatal(err)
	}
	pt, err := ni.PTAlloc(0, nil, portals.PTAny)
	if err != nil {
		t.Fatal(err)
	}
	self, err := ni.PhysID()
	if err != nil {
		t.Fatal(err)
	}
	var once, kept atomic.Int32
	buf := make([]byte, 8)
	spec := portals.MESpec{Start: buf, CT: ct, UID: portals.UIDAny,
		Options: portals.MEOpPut | portals.MEUseOnce | portals.MEEventCTComm | portals.MEEventUnlinkDisable,
		MatchID: portals.ProcessID{NID: portals.NIDAny, PID: portals.PIDAny}, MatchBits: 1,
		OnUnlink: func() { once.Add(1) }}
	if _, err := pt.Append(spec, portals.PriorityList, 0); err != nil {
		t.Fatal(err)
	}
	spec.MatchBits, spec.OnUnlink = 2, func() { kept.Add(1) }
	other, err := pt.Append(spec, portals.PriorityList, 0)
	if err != nil {
		t.Fatal(err)
	}
	md, err := ni.MDBind(portals.MDSpec{Start: []byte("12345678")})
	if err != nil {
		t.Fatal(err)
	}
	if err := md.All().Put(portals.Target{ID: self, PT: pt.Index(), Match: 1}, portals.OpOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := ct.Wait(ctx, 1); err != nil {
		t.Fatal(err)
	}
	// Unlink takes the engine's lock, so the delivery that counted the put
	// (and runs OnUnlink after the count) is over when it returns.
	if err := other.Unlink(); err != nil {
		t.Fatal(err)
	}
	if n := once.Load(); n != 1 {
		t.Fatalf("OnUnlink of the consumed use-once entry ran %d times, want 1", n)
	}
	if n := kept.Load(); n != 0 {
		t.Fatalf("OnUnlink ran %d times for an entry removed by Unlink", n)
	}
}
