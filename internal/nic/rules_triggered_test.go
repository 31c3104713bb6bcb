package nic

import (
	"testing"

	"github.com/goportals/goportals/eq"
)

// Rule: a triggered operation whose threshold is already reached is issued inside the
// call, so it reaches the target before a plain put the caller makes next.
func TestRuleTriggeredReachedIssuesInCall(t *testing.T) {
	nis := newNIs(t, 2, NIMatching|NIPhysical)
	init, tgt := nis[0], nis[1]
	q := mustEQ(t, tgt)
	idx := mustPT(t, tgt, 0, q)
	mustME(t, tgt, idx, MESpec{Start: make([]byte, 64), UID: UIDAny, Options: MEOpPut | MEEventLinkDisable,
		MatchID: anyProc(), IgnoreBits: ^MatchBits(0)}, PriorityList, 0)
	iq := mustEQ(t, init)
	m, err := init.MDBind(MDSpec{Start: make([]byte, 8), EQ: iq, Options: MDEventSuccessDisable})
	if err != nil {
		t.Fatal(err)
	}
	trig, err := init.CTAlloc()
	if err != nil {
		t.Fatal(err)
	}
	dst := mustPhysID(t, tgt)
	for round := 0; round < 50; round++ {
		if err := TriggeredPut(m, 0, 8, NoAckReq, dst, idx, 0, 0, 0, 1, trig, 0); err != nil {
			t.Fatal(err)
		}
		if err := Put(m, 0, 8, NoAckReq, dst, idx, 0, 0, 0, 2); err != nil {
			t.Fatal(err)
		}
		a, b := waitEvent(t, q), waitEvent(t, q)
		if a.HdrData != 1 || b.HdrData != 2 {
			t.Fatalf("round %d: the plain put (hdr %d) arrived before the triggered one (hdr %d)", round, a.HdrData, b.HdrData)
		}
	}
}

// Rule: CTInc and CTSet that reach thresholds issue the released operations before
// they return, in the order they were posted; a triggered counter update is visible
// when the call that released it returns.
func TestRuleCTUpdateIssuesReleasedOps(t *testing.T) {
	nis := newNIs(t, 2, NIMatching|NIPhysical)
	init, tgt := nis[0], nis[1]
	q := mustEQ(t, tgt)
	idx := mustPT(t, tgt, 0, q)
	mustME(t, tgt, idx, MESpec{Start: make([]byte, 64), UID: UIDAny, Options: MEOpPut | MEEventLinkDisable,
		MatchID: anyProc(), IgnoreBits: ^MatchBits(0)}, PriorityList, 0)
	iq := mustEQ(t, init)
	m, err := init.MDBind(MDSpec{Start: make([]byte, 8), EQ: iq, Options: MDEventSuccessDisable})
	if err != nil {
		t.Fatal(err)
	}
	trig := mustCT(t, init)
	other := mustCT(t, init)
	dst := mustPhysID(t, tgt)
	for round := uint64(1); round <= 20; round++ {
		for k := uint64(0); k < 4; k++ {
			if err := TriggeredPut(m, 0, 8, NoAckReq, dst, idx, 0, 0, 0, 10*round+k, trig, round); err != nil {
				t.Fatal(err)
			}
		}
		if err := TriggeredCTInc(other, CTEvent{Success: 1}, trig, round); err != nil {
			t.Fatal(err)
		}
		if err := trig.Inc(CTEvent{Success: 1}); err != nil {
			t.Fatal(err)
		}
		if v, _ := other.Get(); v.Success != round {
			t.Fatalf("round %d: the triggered increment is not visible when Inc returns (%d)", round, v.Success)
		}
		if err := Put(m, 0, 8, NoAckReq, dst, idx, 0, 0, 0, 1000); err != nil {
			t.Fatal(err)
		}
		for k := uint64(0); k < 5; k++ {
			want := 10*round + k
			if k == 4 {
				want = 1000
			}
			if ev := waitEvent(t, q); ev.Type != eq.EventPut || ev.HdrData != want {
				t.Fatalf("round %d: event %d has hdr %d, want %d", round, k, ev.HdrData, want)
			}
		}
	}
	// CTSet releases too.
	if err := TriggeredCTSet(other, CTEvent{Success: 77}, trig, 25); err != nil {
		t.Fatal(err)
	}
	if err := trig.Set(CTEvent{Success: 25}); err != nil {
		t.Fatal(err)
	}
	if v, _ := other.Get(); v.Success != 77 {
		t.Fatalf("the triggered set is not visible when Set returns (%d)", v.Success)
	}
	// A triggered update whose threshold is met is applied inside the call.
	if err := TriggeredCTInc(other, CTEvent{Success: 1}, trig, 1); err != nil {
		t.Fatal(err)
	}
	if v, _ := other.Get(); v.Success != 78 {
		t.Fatalf("the triggered increment posted past its threshold is not visible on return (%d)", v.Success)
	}
}
