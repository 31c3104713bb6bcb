package nic

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/goportals/goportals/eq"
	"github.com/goportals/goportals/internal/envknob"
	"github.com/goportals/goportals/internal/verbs"
)

// splitNIs makes two NIs without progress goroutines whose long puts are split
// (the test drives each side's progress itself).
func splitNIs(t *testing.T) (init, tgt *NI) {
	t.Helper()
	setLongPut(t, "split")
	noHelpers(t)
	nis := newNIs(t, 2, NIMatching|NIPhysical)
	return nis[0], nis[1]
}

// splitSetup exposes dst on tgt (portal index 0, match bits 1, events on the
// returned queue) and puts src there from init, acknowledged, with events on the
// other returned queue. It returns once the target matched the put and holds it
// as one split operation.
func splitSetup(t *testing.T, init, tgt *NI, dst, src []byte) (tq, iq *EQ, top *targetOp) {
	t.Helper()
	tq = mustEQ(t, tgt)
	idx := mustPT(t, tgt, 0, tq)
	mustME(t, tgt, idx, MESpec{Start: dst, UID: UIDAny, Options: MEOpPut | MEEventLinkDisable,
		MatchID: anyProc(), MatchBits: 1}, PriorityList, 5)
	iq = mustEQ(t, init)
	md, err := init.MDBind(MDSpec{Start: src, EQ: iq})
	if err != nil {
		t.Fatal(err)
	}
	before := tgt.Splits()
	if err := Put(md, 0, uint64(len(src)), AckReqFull, mustPhysID(t, tgt), idx, 1, 0, 1, 0); err != nil {
		t.Fatal(err)
	}
	driveUntil(t, 1e7, func() bool { return topsLeft(tgt) == 1 },
		func() string { return "the target never matched the put" }, tgt)
	if n := tgt.Splits() - before; n != 1 {
		t.Fatalf("%d puts split, want 1 (path %q)", n, tgt.Path())
	}
	tgt.mu.Lock()
	for _, top = range tgt.tops {
	}
	tgt.mu.Unlock()
	return tq, iq, top
}

// splitState reads a split operation's FIN flag and pending count.
func splitState(tgt *NI, top *targetOp) (finDone bool, pending int) {
	tgt.mu.Lock()
	defer tgt.mu.Unlock()
	return top.finDone, top.pending
}

// TestSplitPutEitherHalfFirst: a split put completes (data, the target's PUT
// event, the initiator's ACK) once both its halves are in, whichever comes
// first: the target's own READ of the second part, or the initiator's FIN behind
// its WRITE of the first part; neither alone completes it.
func TestSplitPutEitherHalfFirst(t *testing.T) {
	for _, readFirst := range []bool{true, false} {
		name := map[bool]string{true: "read-first", false: "fin-first"}[readFirst]
		t.Run(name, func(t *testing.T) {
			init, tgt := splitNIs(t)
			const size = 256<<10 + 4096 + 9 // an odd length: the halves differ
			dst, src := make([]byte, size), make([]byte, size)
			fill(src, 5)
			tq, iq, top := splitSetup(t, init, tgt, dst, src)
			if top.ctsLen != (size/2)&^(splitAlign-1) {
				t.Fatalf("the CTS asks for %d bytes, want the first %d", top.ctsLen, (size/2)&^(splitAlign-1))
			}
			if readFirst {
				// The initiator does nothing yet: no FIN can come.
				driveUntil(t, 1e7, func() bool { _, p := splitState(tgt, top); return p == 1 },
					func() string { return "the target's READ never completed" }, tgt)
				if fin, _ := splitState(tgt, top); fin {
					t.Fatal("a FIN came from an initiator that never ran")
				}
			} else {
				pushes := init.Pushes()
				driveUntil(t, 1e7, func() bool { return init.Pushes() != pushes },
					func() string { return "the initiator never wrote its part" }, init)
				driveUntil(t, 1e7, func() bool { fin, _ := splitState(tgt, top); return fin },
					func() string { return "the FIN never came" }, tgt)
				if _, p := splitState(tgt, top); p != 1 {
					t.Skipf("the target's round took its READ's completion with the FIN (pending %d): the order is not the one tested", p)
				}
			}
			if topsLeft(tgt) != 1 {
				t.Fatal("one half completed the put")
			}
			// (No look at the target's event queue here: EQ.Get runs a round of
			// progress, which would take the other half.)
			driveUntil(t, 1e7, func() bool { return topsLeft(tgt) == 0 && opsLeft(init) == 0 },
				func() string { return "the put never completed" }, init, tgt)
			if ev := waitEvent(t, tq); ev.Type != eq.EventPut || ev.NIFail != eq.NIOK || ev.MLength != size {
				t.Fatalf("target event %+v, want a PUT of %d bytes", ev, size)
			}
			var ack Event
			for ack.Type != eq.EventAck {
				ack = waitEvent(t, iq)
			}
			if ack.NIFail != eq.NIOK || ack.MLength != size {
				t.Fatalf("ACK %+v, want %d bytes delivered", ack, size)
			}
			if !bytes.Equal(dst, src) {
				t.Fatal("the entry does not hold the put's data")
			}
		})
	}
}

// TestSplitPutPeerFails: when the initiator fails before its FIN, a split put
// whose READ is done but not yet accounted waits for that completion, then
// completes failed; the entry can go.
func TestSplitPutPeerFails(t *testing.T) {
	init, tgt := splitNIs(t)
	dst, src := make([]byte, 256<<10), make([]byte, 256<<10)
	tq, _, top := splitSetup(t, init, tgt, dst, src)
	tgt.peerFailed(mustPeer(t, tgt, init))
	if fin, p := splitState(tgt, top); !fin || p != 1 {
		t.Fatalf("after the peer failed: FIN done %v, %d pending; want the FIN given up and the READ pending", fin, p)
	}
	driveUntil(t, 1e7, func() bool { return topsLeft(tgt) == 0 },
		func() string { return "the put never completed" }, tgt)
	if ev := waitEvent(t, tq); ev.Type != eq.EventPut || ev.NIFail != eq.NIUndeliverable {
		t.Fatalf("event %+v, want a PUT failed NI_UNDELIVERABLE", ev)
	}
	if n := tgt.status[SRMalformed].Load(); n != 0 {
		t.Fatalf("%d messages counted malformed", n)
	}
}

// rejectReads is a queue pair whose provider rejects RDMA READs at post.
type rejectReads struct{ verbs.QP }

func (r rejectReads) Path() string { return r.QP.(pather).Path() }

func (r rejectReads) PostSend(wrs []verbs.SendWR) error {
	if len(wrs) == 1 && wrs[0].Opcode == verbs.OpRDMARead {
		return verbs.Errorf("post_send", verbs.ErrInvalidArgument, errors.New("rejected by the test"))
	}
	return r.QP.PostSend(wrs)
}

// TestSplitPutReadRejected: when the provider rejects the target's READ of a
// split put's second part, the put still waits for the initiator's FIN (its WRITE
// may be under way into the same range), then completes failed at both ends.
func TestSplitPutReadRejected(t *testing.T) {
	init, tgt := splitNIs(t)
	wrapPeerQP(t, mustPeer(t, tgt, init), func(q verbs.QP) verbs.QP { return rejectReads{q} })
	dst, src := make([]byte, 256<<10), make([]byte, 256<<10)
	tq, iq, top := splitSetup(t, init, tgt, dst, src)
	if fin, p := splitState(tgt, top); fin || p != 1 {
		t.Fatalf("after the READ was rejected: FIN done %v, %d pending; want the FIN pending", fin, p)
	}
	driveUntil(t, 1e7, func() bool { return topsLeft(tgt) == 0 && opsLeft(init) == 0 },
		func() string { return "the put never completed" }, init, tgt)
	if ev := waitEvent(t, tq); ev.Type != eq.EventPut || ev.NIFail != eq.NIUndeliverable {
		t.Fatalf("target event %+v, want a PUT failed NI_UNDELIVERABLE", ev)
	}
	var ack Event
	for ack.Type != eq.EventAck {
		ack = waitEvent(t, iq)
	}
	if ack.NIFail != eq.NIUndeliverable {
		t.Fatalf("ACK %+v, want NI_UNDELIVERABLE", ack)
	}
}

// TestPushNapWaitsForSplitReads: a target does not nap while a split put's READ
// is outstanding (its completion needs a look, not a FIN); once only FINs are
// left it may.
func TestPushNapWaitsForSplitReads(t *testing.T) {
	init, tgt := splitNIs(t)
	tq := mustEQ(t, tgt)
	idx := mustPT(t, tgt, 0, tq)
	md, err := init.MDBind(MDSpec{Start: make([]byte, 1<<20)})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		mustME(t, tgt, idx, MESpec{Start: make([]byte, 1<<20), UID: UIDAny, Options: MEOpPut | MEUseOnce,
			MatchID: anyProc(), MatchBits: 1}, PriorityList, 0)
		if err := Put(md, 0, 1<<20, NoAckReq, mustPhysID(t, tgt), idx, 1, 0, 0, 0); err != nil {
			t.Fatal(err)
		}
	}
	driveUntil(t, 1e7, func() bool { return tgt.Splits() == 2 },
		func() string { return "the target never split both puts" }, tgt)
	reading := func() bool {
		tgt.mu.Lock()
		defer tgt.mu.Unlock()
		for _, top := range tgt.tops {
			if top.pending > 1 {
				return true
			}
		}
		return false
	}
	if reading() {
		if d := tgt.pushNap(); d != 0 {
			t.Fatalf("a nap of %v while a split put's READ is outstanding", d)
		}
	}
	driveUntil(t, 1e7, func() bool { return !reading() },
		func() string { return "the READs never completed" }, tgt)
	// The nap is sized by what the initiator still writes (half of each put),
	// not by the puts' whole lengths.
	half := uint64(1<<20) / 2
	if want := time.Duration(half/pushNapRate) * time.Microsecond / 2; tgt.pushNap() != want {
		t.Fatalf("a nap of %v with two split puts that wait only for their FINs, want %v", tgt.pushNap(), want)
	}
}

// TestSplitNotOverTCP: over the soft provider's TCP path a pushed put is not
// split (both parts would cross the same stream): the initiator writes it all.
func TestSplitNotOverTCP(t *testing.T) {
	t.Setenv(string(envknob.SoftPath), "tcp")
	setLongPut(t, "split")
	nis := newNIs(t, 2, NIMatching|NIPhysical)
	init, tgt := nis[0], nis[1]
	tq := mustEQ(t, tgt)
	idx := mustPT(t, tgt, 0, tq)
	dst, src := make([]byte, 256<<10), make([]byte, 256<<10)
	fill(src, 9)
	mustME(t, tgt, idx, MESpec{Start: dst, UID: UIDAny, Options: MEOpPut | MEEventLinkDisable, MatchID: anyProc(),
		MatchBits: 1}, PriorityList, 0)
	md, err := init.MDBind(MDSpec{Start: src})
	if err != nil {
		t.Fatal(err)
	}
	if err := Put(md, 0, uint64(len(src)), NoAckReq, mustPhysID(t, tgt), idx, 1, 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	if ev := waitEvent(t, tq); ev.Type != eq.EventPut || ev.NIFail != eq.NIOK {
		t.Fatalf("event %+v, want a PUT", ev)
	}
	if p := tgt.Path(); p != "tcp" {
		t.Fatalf("path %q, want tcp", p)
	}
	if tgt.Splits() != 0 || init.Pushes() != 1 {
		t.Fatalf("%d splits and %d pushes over TCP, want 0 and 1", tgt.Splits(), init.Pushes())
	}
	if !bytes.Equal(dst, src) {
		t.Fatal("the entry does not hold the put's data")
	}
}
