package nic

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/goportals/goportals/eq"
	"github.com/goportals/goportals/internal/verbs"
)

// TestPushInitiatorFiniBeforeCTS: an initiator NI finalized while its target
// waits for a pushed put's FIN (the CTS never read) does not leave the target
// waiting: the put completes there NI_UNDELIVERABLE, its pin is released and the
// entry can be unlinked.
func TestPushInitiatorFiniBeforeCTS(t *testing.T) {
	init, tgt := pushNIs(t)
	q := mustEQ(t, tgt)
	idx := mustPT(t, tgt, 0, q)
	m := mustME(t, tgt, idx, MESpec{Start: make([]byte, 64<<10), UID: UIDAny, Options: MEOpPut | MEEventLinkDisable,
		MatchID: anyProc(), MatchBits: 1}, PriorityList, 5)
	src := make([]byte, 64<<10)
	md, err := init.MDBind(MDSpec{Start: src, EQ: mustEQ(t, init)})
	if err != nil {
		t.Fatal(err)
	}
	if err := Put(md, 0, uint64(len(src)), AckReqFull, mustPhysID(t, tgt), idx, 1, 0, 1, 0); err != nil {
		t.Fatal(err)
	}
	driveUntil(t, 1e7, func() bool { return topsLeft(tgt) == 1 },
		func() string { return "the target never matched the put" }, tgt)
	if err := init.Fini(); err != nil {
		t.Fatal(err)
	}
	ev := waitEvent(t, q)
	if ev.Type != eq.EventPut || ev.NIFail != eq.NIUndeliverable {
		t.Fatalf("event %+v, want a PUT failed NI_UNDELIVERABLE", ev)
	}
	if n := topsLeft(tgt); n != 0 {
		t.Fatalf("%d target operations left", n)
	}
	if err := m.Unlink(); err != nil {
		t.Fatalf("unlink: %v", err)
	}
}

// rejectWrites is a queue pair whose provider rejects RDMA WRITEs when they are
// posted (as an HCA's post does a request it cannot take); the first busy ones
// it answers "send queue full" instead, so the engine queues them first.
type rejectWrites struct {
	verbs.QP
	busy int
}

func (r *rejectWrites) PostSend(wrs []verbs.SendWR) error {
	if len(wrs) == 1 && wrs[0].Opcode == verbs.OpRDMAWrite {
		if r.busy > 0 {
			r.busy--
			return verbs.Errorf("post_send", verbs.ErrNoResources, nil)
		}
		return verbs.Errorf("post_send", verbs.ErrInvalidArgument, errors.New("rejected by the test"))
	}
	return r.QP.PostSend(wrs)
}

// TestPushWriteRejectedAtPost: when the provider rejects a pushed put's WRITE at
// post (at once, or when the engine posts it from its queue), the FIN behind it
// says so: the target neither waits for ever (pinned, its entry IN_USE) nor
// reports data that never came as delivered, and the initiator's ACK carries the
// failure.
func TestPushWriteRejectedAtPost(t *testing.T) {
	for _, busy := range []int{0, 1} {
		t.Run(fmt.Sprintf("busy=%d", busy), func(t *testing.T) {
			init, tgt := pushNIs(t)
			q := mustEQ(t, tgt)
			idx := mustPT(t, tgt, 0, q)
			mustME(t, tgt, idx, MESpec{Start: make([]byte, 64<<10), UID: UIDAny, Options: MEOpPut | MEEventLinkDisable,
				MatchID: anyProc(), MatchBits: 1}, PriorityList, 5)
			iq := mustEQ(t, init)
			md, err := init.MDBind(MDSpec{Start: make([]byte, 64<<10), EQ: iq})
			if err != nil {
				t.Fatal(err)
			}
			ipr := mustPeer(t, init, tgt)
			wrapPeerQP(t, ipr, func(orig verbs.QP) verbs.QP { return &rejectWrites{QP: orig, busy: busy} })
			if err := Put(md, 0, 64<<10, AckReqFull, mustPhysID(t, tgt), idx, 1, 0, 1, 0); err != nil {
				t.Fatal(err)
			}
			driveUntil(t, 1e6, func() bool { return opsLeft(init) == 0 },
				func() string { return "the put never completed (the target waits for a FIN)" }, tgt, init)
			if ev := waitEvent(t, q); ev.Type != eq.EventPut || ev.NIFail != eq.NIUndeliverable {
				t.Fatalf("target event %+v, want a PUT failed NI_UNDELIVERABLE", ev)
			}
			if ev := waitEvent(t, iq); ev.Type != eq.EventSend {
				t.Fatalf("initiator event %+v, want SEND", ev)
			}
			if ev := waitEvent(t, iq); ev.Type != eq.EventAck || ev.NIFail != eq.NIUndeliverable {
				t.Fatalf("initiator event %+v, want an ACK failed NI_UNDELIVERABLE", ev)
			}
		})
	}
}

// TestNoPushWithoutProgressGoroutine: with PTL_PROGRESS_GOROUTINE=0 an initiator
// that does not call in makes no progress, so it does not offer to push its long
// puts: its target still completes them alone (it pulls), as the progress model
// promises a target (docs/protocol.md, Progress), instead of waiting for a CTS
// the initiator never reads.
func TestNoPushWithoutProgressGoroutine(t *testing.T) {
	setPushPuts(t, true)
	old := progressEnvOff
	progressEnvOff = true
	t.Cleanup(func() { progressEnvOff = old })
	nis := newNIs(t, 2, NIMatching|NIPhysical)
	init, tgt := nis[0], nis[1]
	q := mustEQ(t, tgt)
	idx := mustPT(t, tgt, 0, q)
	dst := make([]byte, 64<<10)
	mustME(t, tgt, idx, MESpec{Start: dst, UID: UIDAny, Options: MEOpPut | MEEventLinkDisable,
		MatchID: anyProc(), MatchBits: 1}, PriorityList, 5)
	src := make([]byte, len(dst))
	fill(src, 9)
	md, err := init.MDBind(MDSpec{Start: src, EQ: mustEQ(t, init)})
	if err != nil {
		t.Fatal(err)
	}
	if err := Put(md, 0, uint64(len(src)), AckReqFull, mustPhysID(t, tgt), idx, 1, 0, 1, 0); err != nil {
		t.Fatal(err)
	}
	// Only the target drives progress (its wait): the initiator never calls in.
	if ev := waitEvent(t, q); ev.Type != eq.EventPut || ev.NIFail != eq.NIOK || ev.MLength != uint64(len(src)) {
		t.Fatalf("event %+v, want a whole PUT", ev)
	}
	if !bytes.Equal(dst, src) {
		t.Fatal("the entry does not hold the put's data")
	}
}

// TestPushManySegmentEntryPulls: a long put offered for pushing into an entry
// whose matched range has more segments than a CTS can name is pulled by the
// target instead, whole and with the usual events.
func TestPushManySegmentEntryPulls(t *testing.T) {
	setPushPuts(t, true)
	nis := newNIs(t, 2, NIMatching|NIPhysical)
	init, tgt := nis[0], nis[1]
	q := mustEQ(t, tgt)
	idx := mustPT(t, tgt, 0, q)
	const pieces, piece = maxRequestSegs + 9, 4096
	whole := make([]byte, pieces*piece)
	iov := make([][]byte, pieces)
	for i := range iov {
		iov[i] = whole[i*piece : (i+1)*piece : (i+1)*piece]
	}
	mustME(t, tgt, idx, MESpec{Iovecs: iov, UID: UIDAny, Options: MEOpPut | MEEventLinkDisable,
		MatchID: anyProc(), MatchBits: 1}, PriorityList, 5)
	src := make([]byte, len(whole))
	fill(src, 5)
	iq := mustEQ(t, init)
	md, err := init.MDBind(MDSpec{Start: src, EQ: iq})
	if err != nil {
		t.Fatal(err)
	}
	before := init.Pushes()
	if err := Put(md, 0, uint64(len(src)), AckReqFull, mustPhysID(t, tgt), idx, 1, 0, 1, 0); err != nil {
		t.Fatal(err)
	}
	if ev := waitEvent(t, q); ev.Type != eq.EventPut || ev.NIFail != eq.NIOK || ev.MLength != uint64(len(src)) {
		t.Fatalf("target event %+v", ev)
	}
	waitEvent(t, iq)
	if ev := waitEvent(t, iq); ev.Type != eq.EventAck || ev.NIFail != eq.NIOK {
		t.Fatalf("initiator event %+v", ev)
	}
	if !bytes.Equal(whole, src) {
		t.Fatal("the entry does not hold the put's data")
	}
	if init.Pushes() != before {
		t.Fatal("a put into more segments than a CTS names was pushed")
	}
}

// pushNIs makes an initiator and a target NI that push their long puts and run
// no progress goroutines: the test drives every round.
func pushNIs(t *testing.T) (init, tgt *NI) {
	t.Helper()
	setPushPuts(t, true)
	noHelpers(t)
	nis := newNIs(t, 2, NIMatching|NIPhysical)
	return nis[0], nis[1]
}

// noHelpers starts no progress goroutine for the NIs the test makes after it.
func noHelpers(t *testing.T) {
	testNoHelpers.Store(true)
	t.Cleanup(func() { testNoHelpers.Store(false) })
}

// driveUntil runs a progress round on each of nis, in that order, until done
// holds; if it does not after limit tries the test fails with failed's message.
func driveUntil(t *testing.T, limit int, done func() bool, failed func() string, nis ...*NI) {
	t.Helper()
	for i := 0; !done(); i++ {
		if i == limit {
			t.Fatal(failed())
		}
		for _, ni := range nis {
			ni.progressOnce(true)
		}
	}
}

// opsLeft is the number of the NI's own operations in flight.
func opsLeft(ni *NI) int {
	ni.mu.Lock()
	defer ni.mu.Unlock()
	return len(ni.ops)
}

// topsLeft is the number of target operations the NI holds.
func topsLeft(ni *NI) int {
	ni.mu.Lock()
	defer ni.mu.Unlock()
	return len(ni.tops)
}

// wrapPeerQP puts wrap(pr's queue pair) in its place until the test ends.
func wrapPeerQP(t *testing.T, pr *peer, wrap func(verbs.QP) verbs.QP) {
	pr.sendMu.Lock()
	orig := pr.qp
	pr.qp = wrap(orig)
	pr.sendMu.Unlock()
	t.Cleanup(func() {
		pr.sendMu.Lock()
		pr.qp = orig
		pr.sendMu.Unlock()
	})
}
