package nic

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/goportals/goportals/eq"
)

// TestRulesAtomicTruncatedMLength: an atomic that the target entry truncates applies
// the whole elements that fit, and its ACK or REPLY reports exactly those bytes in
// mlength: a uint64 SUM of 16 bytes into 12 bytes of room applies one element and
// reports 8; into 4 bytes of room it applies nothing and reports 0.
func TestRulesAtomicTruncatedMLength(t *testing.T) {
	nis := newNIsWith(t, 2, NIMatching|NIPhysical, nil)
	init, tgt := nis[0], nis[1]
	tbuf := make([]byte, 12)
	tq, _ := ruleTarget(t, tgt, tbuf, nil)
	iq, err := init.EQAlloc(64)
	if err != nil {
		t.Fatal(err)
	}
	src := make([]byte, 16)
	binary.LittleEndian.PutUint64(src, 5)
	binary.LittleEndian.PutUint64(src[8:], 7)
	sm, err := init.MDBind(MDSpec{Start: src, EQ: iq, Options: MDEventSendDisable})
	if err != nil {
		t.Fatal(err)
	}
	res := make([]byte, 16)
	rm, err := init.MDBind(MDSpec{Start: res, EQ: iq})
	if err != nil {
		t.Fatal(err)
	}
	dst := mustPhysID(t, tgt)
	fill(tbuf, 1)
	before := append([]byte(nil), tbuf...)

	// 12 bytes of room: one element.
	if err := FetchAtomic(rm, 0, sm, 0, 16, dst, 4, 0x42, 0, 1, 0, eq.OpSum, eq.Uint64); err != nil {
		t.Fatal(err)
	}
	if ev := waitKind(t, iq, eq.EventReply); ev.NIFail != eq.NIOK || ev.MLength != 8 {
		t.Errorf("reply of a uint64 SUM truncated to 12 bytes: mlength %d, want 8 (%+v)", ev.MLength, ev)
	}
	waitKind(t, tq, eq.EventFetchAtomic)
	if got, want := binary.LittleEndian.Uint64(tbuf), binary.LittleEndian.Uint64(before)+5; got != want {
		t.Errorf("first element %#x, want %#x", got, want)
	}
	if !bytes.Equal(tbuf[8:], before[8:]) {
		t.Errorf("the partial element changed: % x, was % x", tbuf[8:], before[8:])
	}
	if !bytes.Equal(res[:8], before[:8]) {
		t.Errorf("fetched % x, want the old % x", res[:8], before[:8])
	}

	// 4 bytes of room (remote offset 8): nothing.
	copy(before, tbuf)
	if err := Atomic(sm, 0, 16, AckReqFull, dst, 4, 0x42, 8, 2, 0, eq.OpSum, eq.Uint64); err != nil {
		t.Fatal(err)
	}
	if ev := waitKind(t, iq, eq.EventAck); ev.NIFail != eq.NIOK || ev.MLength != 0 {
		t.Errorf("ack of a uint64 SUM truncated to 4 bytes: mlength %d, want 0 (%+v)", ev.MLength, ev)
	}
	waitKind(t, tq, eq.EventAtomic)
	if !bytes.Equal(tbuf, before) {
		t.Errorf("target % x, want it unchanged % x", tbuf, before)
	}
}

// TestRulesAtomicTruncatedTargetEvent: the target's own event of a truncated atomic
// reports the same whole elements as the initiator's.
func TestRulesAtomicTruncatedTargetEvent(t *testing.T) {
	nis := newNIsWith(t, 2, NIMatching|NIPhysical, nil)
	init, tgt := nis[0], nis[1]
	tq, tct := ruleTarget(t, tgt, make([]byte, 12), nil)
	m, err := init.MDBind(MDSpec{Start: make([]byte, 16)})
	if err != nil {
		t.Fatal(err)
	}
	dst := mustPhysID(t, tgt)
	if err := Atomic(m, 0, 16, NoAckReq, dst, 4, 0x42, 0, 0, 0, eq.OpSum, eq.Uint64); err != nil {
		t.Fatal(err)
	}
	ev := waitKind(t, tq, eq.EventAtomic)
	waitCT(t, tct, 1)
	if ev.MLength != 8 {
		t.Errorf("target event mlength %d, want 8", ev.MLength)
	}
}

// TestRulesAtomicLengths: as in the reference, an atomic's length need not be a
// multiple of its datatype's size (the whole elements it holds are applied, and
// mlength says so), and a conditional or masked swap takes any length up to one
// element, 0 included; longer ones are ARG_INVALID.
func TestRulesAtomicLengths(t *testing.T) {
	nis := newNIsWith(t, 2, NIMatching|NIPhysical, nil)
	init, tgt := nis[0], nis[1]
	tbuf := make([]byte, 64)
	tq, _ := ruleTarget(t, tgt, tbuf, nil)
	iq, err := init.EQAlloc(64)
	if err != nil {
		t.Fatal(err)
	}
	src := make([]byte, 64)
	sm, err := init.MDBind(MDSpec{Start: src, EQ: iq, Options: MDEventSendDisable})
	if err != nil {
		t.Fatal(err)
	}
	res := make([]byte, 64)
	rm, err := init.MDBind(MDSpec{Start: res, EQ: iq})
	if err != nil {
		t.Fatal(err)
	}
	dst := mustPhysID(t, tgt)

	// uint32 SUM of 6 bytes: one element.
	binary.LittleEndian.PutUint32(src, 3)
	binary.LittleEndian.PutUint16(src[4:], 0xffff)
	binary.LittleEndian.PutUint32(tbuf, 40)
	binary.LittleEndian.PutUint16(tbuf[4:], 0x1234)
	if err := Atomic(sm, 0, 6, AckReqFull, dst, 4, 0x42, 0, 1, 0, eq.OpSum, eq.Uint32); err != nil {
		t.Fatalf("uint32 SUM of 6 bytes: %v", err)
	}
	if ev := waitKind(t, iq, eq.EventAck); ev.NIFail != eq.NIOK || ev.MLength != 4 {
		t.Errorf("ack of a uint32 SUM of 6 bytes: mlength %d, want 4 (%+v)", ev.MLength, ev)
	}
	if ev := waitKind(t, tq, eq.EventAtomic); ev.RLength != 6 {
		t.Errorf("target event %+v, want rlength 6", ev)
	}
	if got := binary.LittleEndian.Uint32(tbuf); got != 43 {
		t.Errorf("element %d, want 43", got)
	}
	if got := binary.LittleEndian.Uint16(tbuf[4:]); got != 0x1234 {
		t.Errorf("the bytes past the last whole element became %#x", got)
	}

	// CSWAP of 0 bytes: accepted, nothing compared or swapped, nothing fetched.
	binary.LittleEndian.PutUint64(tbuf, 7)
	clear(res)
	if err := Swap(rm, 0, sm, 0, 0, dst, 4, 0x42, 0, 2, 0, u64(7), eq.OpCSwap, eq.Uint64); err != nil {
		t.Fatalf("CSWAP of 0 bytes: %v", err)
	}
	if ev := waitKind(t, iq, eq.EventReply); ev.NIFail != eq.NIOK || ev.MLength != 0 {
		t.Errorf("reply of a CSWAP of 0 bytes: %+v, want mlength 0", ev)
	}
	if ev := waitKind(t, tq, eq.EventFetchAtomic); ev.MLength != 0 || ev.RLength != 0 {
		t.Errorf("target event of a CSWAP of 0 bytes: %+v", ev)
	}
	if got := binary.LittleEndian.Uint64(tbuf); got != 7 {
		t.Errorf("a CSWAP of 0 bytes changed the target to %d", got)
	}
	// MSWAP of 2 bytes of a uint64: less than an element, nothing applied.
	if err := Swap(rm, 0, sm, 0, 2, dst, 4, 0x42, 0, 3, 0, u64(^uint64(0)), eq.OpMSwap, eq.Uint64); err != nil {
		t.Fatalf("MSWAP of 2 bytes: %v", err)
	}
	if ev := waitKind(t, iq, eq.EventReply); ev.NIFail != eq.NIOK || ev.MLength != 0 {
		t.Errorf("reply of an MSWAP of 2 bytes of a uint64: %+v, want mlength 0", ev)
	}
	waitKind(t, tq, eq.EventFetchAtomic)
	if got := binary.LittleEndian.Uint64(tbuf); got != 7 {
		t.Errorf("an MSWAP of 2 bytes changed the target to %d", got)
	}
	// More than one element: ARG_INVALID; SWAP takes any length.
	if err := Swap(rm, 0, sm, 0, 16, dst, 4, 0x42, 0, 0, 0, u64(7), eq.OpCSwap, eq.Uint64); ErrnoOf(err) != ArgInvalid {
		t.Errorf("CSWAP of two elements: %v, want ARG_INVALID", err)
	}
	if err := Swap(rm, 0, sm, 0, 12, dst, 4, 0x42, 0, 4, 0, nil, eq.OpSwap, eq.Uint64); err != nil {
		t.Fatalf("SWAP of 12 bytes of uint64: %v", err)
	}
	if ev := waitKind(t, iq, eq.EventReply); ev.NIFail != eq.NIOK || ev.MLength != 8 {
		t.Errorf("reply of a SWAP of 12 bytes of uint64: %+v, want mlength 8", ev)
	}
	waitKind(t, tq, eq.EventFetchAtomic)
	noEvent(t, tq)
}
