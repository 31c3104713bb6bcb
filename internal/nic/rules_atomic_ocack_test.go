package nic

import (
	"testing"

	"github.com/goportals/goportals/eq"
)

// TestRulesAtomicOCAckCountsOperations: a PTL_OC_ACK_REQ acknowledgment counts one
// operation on the descriptor's counting event even when the descriptor counts
// bytes (PTL_MD_EVENT_CT_BYTES), while a PTL_CT_ACK_REQ one counts mlength bytes.
func TestRulesAtomicOCAckCountsOperations(t *testing.T) {
	nis := newNIsWith(t, 2, NIMatching|NIPhysical, nil)
	init, tgt := nis[0], nis[1]
	tq, _ := ruleTarget(t, tgt, make([]byte, 256), nil)
	ct, err := init.CTAlloc()
	if err != nil {
		t.Fatal(err)
	}
	m, err := init.MDBind(MDSpec{Start: make([]byte, 64), CT: ct, Options: MDEventCTAck | MDEventCTBytes})
	if err != nil {
		t.Fatal(err)
	}
	dst := mustPhysID(t, tgt)

	if err := Put(m, 0, 24, OCAckReq, dst, 4, 0x42, 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	waitKind(t, tq, eq.EventPut)
	if v := waitCT(t, ct, 1); v.Success != 1 || v.Failure != 0 {
		t.Fatalf("counter %+v after a put of 24 bytes with OC_ACK, want one operation", v)
	}
	if err := Atomic(m, 0, 16, OCAckReq, dst, 4, 0x42, 0, 0, 0, eq.OpSum, eq.Uint64); err != nil {
		t.Fatal(err)
	}
	waitKind(t, tq, eq.EventAtomic)
	if v := waitCT(t, ct, 2); v.Success != 2 || v.Failure != 0 {
		t.Fatalf("counter %+v after an atomic of 16 bytes with OC_ACK, want two operations", v)
	}
	// A counting ack of the same descriptor counts the bytes.
	if err := Put(m, 0, 24, CTAckReq, dst, 4, 0x42, 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	waitKind(t, tq, eq.EventPut)
	if v := waitCT(t, ct, 2+24); v.Success != 2+24 || v.Failure != 0 {
		t.Fatalf("counter %+v after a put of 24 bytes with CT_ACK, want 2 + 24", v)
	}
}

// TestRulesAtomicOCAckNeedsNoCounter: as in the reference's argument checks, only
// PTL_CT_ACK_REQ needs a counting event on the descriptor; PTL_OC_ACK_REQ from a
// descriptor without one is accepted (there is nothing to count it on), and posts
// no ACK event.
func TestRulesAtomicOCAckNeedsNoCounter(t *testing.T) {
	nis := newNIsWith(t, 2, NIMatching|NIPhysical, nil)
	init, tgt := nis[0], nis[1]
	tq, _ := ruleTarget(t, tgt, make([]byte, 256), nil)
	iq, err := init.EQAlloc(16)
	if err != nil {
		t.Fatal(err)
	}
	bare, err := init.MDBind(MDSpec{Start: make([]byte, 64)})
	if err != nil {
		t.Fatal(err)
	}
	withEQ, err := init.MDBind(MDSpec{Start: make([]byte, 64), EQ: iq})
	if err != nil {
		t.Fatal(err)
	}
	dst := mustPhysID(t, tgt)
	if err := Put(bare, 0, 8, CTAckReq, dst, 4, 0x42, 0, 0, 0); ErrnoOf(err) != ArgInvalid {
		t.Errorf("CT_ACK from a descriptor without a counter: %v, want ARG_INVALID", err)
	}
	if err := Put(bare, 0, 8, OCAckReq, dst, 4, 0x42, 0, 0, 0); err != nil {
		t.Fatalf("put with OC_ACK from a descriptor without a counter: %v", err)
	}
	waitKind(t, tq, eq.EventPut)
	if err := Atomic(bare, 0, 8, OCAckReq, dst, 4, 0x42, 0, 0, 0, eq.OpSum, eq.Uint64); err != nil {
		t.Fatalf("atomic with OC_ACK from a descriptor without a counter: %v", err)
	}
	waitKind(t, tq, eq.EventAtomic)
	if err := Put(withEQ, 0, 8, OCAckReq, dst, 4, 0x42, 0, 9, 0); err != nil {
		t.Fatalf("put with OC_ACK from a descriptor with only an event queue: %v", err)
	}
	waitKind(t, tq, eq.EventPut)
	if ev := waitKind(t, iq, eq.EventSend); ev.UserPtr != 9 {
		t.Fatalf("send event %+v", ev)
	}
	// The operation completes (its descriptor is released) without an ACK event.
	waitReleased(t, withEQ)
	noEvent(t, iq)
	waitReleased(t, bare)
}

// waitReleased releases m once its operations completed (IN_USE until then).
func waitReleased(t testing.TB, m *MD) {
	t.Helper()
	for i := 0; ; i++ {
		err := m.Release()
		if err == nil {
			return
		}
		if ErrnoOf(err) != InUse || i > 200000 {
			t.Fatalf("MDRelease: %v", err)
		}
		m.ni.assist()
	}
}
