package nic

import (
	"testing"

	"github.com/goportals/goportals/eq"
)

// TestRulesAtomicSwapOps: PtlSwap takes only SWAP, the conditional swaps and
// MSWAP; the arithmetic and logical operations are ARG_INVALID there (as the
// swap-operations are through PtlAtomic and PtlFetchAtomic), triggered or not.
func TestRulesAtomicSwapOps(t *testing.T) {
	nis := newNIsWith(t, 2, NIMatching|NIPhysical, nil)
	init, tgt := nis[0], nis[1]
	tq, _ := ruleTarget(t, tgt, make([]byte, 64), nil)
	iq, err := init.EQAlloc(64)
	if err != nil {
		t.Fatal(err)
	}
	put, err := init.MDBind(MDSpec{Start: make([]byte, 64), EQ: iq, Options: MDEventSendDisable})
	if err != nil {
		t.Fatal(err)
	}
	get, err := init.MDBind(MDSpec{Start: make([]byte, 64), EQ: iq})
	if err != nil {
		t.Fatal(err)
	}
	trig, err := init.CTAlloc()
	if err != nil {
		t.Fatal(err)
	}
	dst := mustPhysID(t, tgt)
	operand := make([]byte, 8)
	for op := eq.OpMin; op <= eq.OpBXor; op++ {
		if err := Swap(get, 0, put, 0, 8, dst, 4, 0x42, 0, 0, 0, operand, op, eq.Uint64); ErrnoOf(err) != ArgInvalid {
			t.Errorf("PtlSwap with %v: %v, want ARG_INVALID", op, err)
		}
		if err := TriggeredSwap(get, 0, put, 0, 8, dst, 4, 0x42, 0, 0, 0, operand, op, eq.Uint64, trig, 1); ErrnoOf(err) != ArgInvalid {
			t.Errorf("PtlTriggeredSwap with %v: %v, want ARG_INVALID", op, err)
		}
	}
	for op := eq.OpSwap; op <= eq.OpMSwap; op++ {
		if err := Atomic(put, 0, 8, NoAckReq, dst, 4, 0x42, 0, 0, 0, op, eq.Uint64); ErrnoOf(err) != ArgInvalid {
			t.Errorf("PtlAtomic with %v: %v, want ARG_INVALID", op, err)
		}
		if err := FetchAtomic(get, 0, put, 0, 8, dst, 4, 0x42, 0, 0, 0, op, eq.Uint64); ErrnoOf(err) != ArgInvalid {
			t.Errorf("PtlFetchAtomic with %v: %v, want ARG_INVALID", op, err)
		}
	}
	// Every swap operation goes through PtlSwap.
	for op := eq.OpSwap; op <= eq.OpMSwap; op++ {
		if err := Swap(get, 0, put, 0, 8, dst, 4, 0x42, 0, uint64(op), 0, operand, op, eq.Uint64); err != nil {
			t.Fatalf("PtlSwap with %v: %v", op, err)
		}
		if ev := waitKind(t, iq, eq.EventReply); ev.NIFail != eq.NIOK || ev.MLength != 8 {
			t.Errorf("PtlSwap with %v: reply %+v", op, ev)
		}
		if ev := waitKind(t, tq, eq.EventFetchAtomic); ev.AtomicOp != op {
			t.Errorf("PtlSwap with %v: target event %+v", op, ev)
		}
	}
	noEvent(t, tq)
}
