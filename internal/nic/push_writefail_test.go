package nic

import (
	"testing"

	"github.com/goportals/goportals/eq"
	"github.com/goportals/goportals/internal/mdreg"
)

// TestUnsignaledPushWriteFails: a pushed put's WRITE, posted unsignaled, that
// fails at the provider (the segment it names is not the target's) still fails
// its put: the initiator's events say NI_UNDELIVERABLE, the put's pin goes, and
// its MD is not left busy.
func TestUnsignaledPushWriteFails(t *testing.T) {
	init, tgt := pushNIs(t)
	idx := mustPT(t, tgt, 0, nil)
	iq := mustEQ(t, init)
	src := make([]byte, 64<<10)
	md, err := init.MDBind(MDSpec{Start: src, EQ: iq})
	if err != nil {
		t.Fatal(err)
	}
	if err := Put(md, 0, uint64(len(src)), AckReqFull, mustPhysID(t, tgt), idx, 1, 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	init.mu.Lock()
	var o *initOp
	for _, op := range init.ops {
		o = op
	}
	init.mu.Unlock()
	if o == nil || !o.long {
		t.Fatal("no long put in flight")
	}
	// A CTS naming a segment under a key the target never handed out (the
	// target itself runs no round here).
	pr := mustPeer(t, init, tgt)
	dst := make([]byte, len(src))
	segs := make([]byte, 16)
	putSeg(segs, mdreg.RemoteSegment{Addr: addrOf(dst), Len: uint32(len(dst)), RKey: 0x7eadbeef})
	h := header{kind: msgCTS, opid: o.id, hdrData: 1, mlength: uint64(len(src))}
	init.progMu.Lock()
	init.handleCTS(pr, &h, segs)
	init.progMu.Unlock()
	driveUntil(t, 1e6, func() bool { return opsLeft(init) == 0 },
		func() string { return "the put whose write failed never completed" }, init)
	if ev := waitEvent(t, iq); ev.Type != eq.EventSend || ev.NIFail != eq.NIUndeliverable {
		t.Fatalf("initiator event %+v, want SEND failed NI_UNDELIVERABLE", ev)
	}
	if ev := waitEvent(t, iq); ev.Type != eq.EventAck || ev.NIFail != eq.NIUndeliverable {
		t.Fatalf("initiator event %+v, want ACK failed NI_UNDELIVERABLE", ev)
	}
	if o.pinned != nil {
		t.Fatal("the failed put's pin is still held")
	}
	if err := md.Release(); err != nil {
		t.Fatalf("releasing the MD of the failed put: %v", err)
	}
}
