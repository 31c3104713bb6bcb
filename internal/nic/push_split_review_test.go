package nic

import (
	"bytes"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/goportals/goportals/eq"
	"github.com/goportals/goportals/internal/verbs"
)

// gateReads is a queue pair whose RDMA READs the test controls: while hold is
// set the provider says it has no room for them (the engine queues them), with
// fail set it rejects them, and failNth rejects only the READ posted as the
// n-th (1-based). Sends may be rejected too (failSends). It counts the READs it
// let through.
type gateReads struct {
	verbs.QP
	g *gate
}

type gate struct {
	hold, fail, failSends atomic.Bool
	failNth               int64
	posted, tried         atomic.Int64
}

func (r gateReads) Path() string { return r.QP.(pather).Path() }

func (r gateReads) PostSend(wrs []verbs.SendWR) error {
	if len(wrs) == 1 && wrs[0].Opcode == verbs.OpSend && r.g.failSends.Load() {
		return verbs.Errorf("post_send", verbs.ErrInvalidArgument, errors.New("send rejected by the test"))
	}
	if len(wrs) == 1 && wrs[0].Opcode == verbs.OpRDMARead {
		if r.g.hold.Load() {
			return verbs.Errorf("post_send", verbs.ErrNoResources, errors.New("held by the test"))
		}
		if n := r.g.tried.Add(1); r.g.fail.Load() || n == r.g.failNth {
			return verbs.Errorf("post_send", verbs.ErrInvalidArgument, errors.New("read rejected by the test"))
		}
		if err := r.QP.PostSend(wrs); err != nil {
			return err
		}
		r.g.posted.Add(1)
		return nil
	}
	return r.QP.PostSend(wrs)
}

// gatePeer puts a gateReads in place of tgt's queue pair to init.
func gatePeer(t *testing.T, tgt, init *NI) (*gate, *peer) {
	t.Helper()
	g := &gate{}
	pr := mustPeer(t, tgt, init)
	wrapPeerQP(t, pr, func(q verbs.QP) verbs.QP { return gateReads{q, g} })
	return g, pr
}

// noMessageSends makes pr send its messages as work requests (through its
// queue pair, wrappers included) until the test ends.
func noMessageSends(t *testing.T, pr *peer) {
	pr.sendMu.Lock()
	old := pr.msend
	pr.msend = nil
	pr.sendMu.Unlock()
	t.Cleanup(func() {
		pr.sendMu.Lock()
		pr.msend = old
		pr.sendMu.Unlock()
	})
}

// onlyTop returns the single target operation tgt holds (nil: none).
func onlyTop(tgt *NI) *targetOp {
	tgt.mu.Lock()
	defer tgt.mu.Unlock()
	for _, top := range tgt.tops {
		return top
	}
	return nil
}

// pinsOut is how many registrations ni holds pinned.
func pinsOut(ni *NI) int {
	ni.mu.Lock()
	defer ni.mu.Unlock()
	if ni.reg == nil {
		return 0
	}
	return ni.reg.Outstanding()
}

// TestSplitReviewBoundary: a put of exactly splitMin bytes is split, its CTS
// asking for the first half; one byte less is not; either way the entry holds
// the data and both ends report it.
func TestSplitReviewBoundary(t *testing.T) {
	for _, c := range []struct {
		size  int
		split bool
		cts   uint64
	}{{splitMin - 1, false, splitMin - 1}, {splitMin, true, splitMin / 2}, {splitMin + splitAlign + 1, true, splitMin / 2}} {
		init, tgt := splitNIs(t)
		dst, src := make([]byte, c.size), make([]byte, c.size)
		fill(src, 7)
		tq := mustEQ(t, tgt)
		idx := mustPT(t, tgt, 0, tq)
		mustME(t, tgt, idx, MESpec{Start: dst, UID: UIDAny, Options: MEOpPut | MEUseOnce | MEEventLinkDisable | MEEventUnlinkDisable, MatchID: anyProc(), MatchBits: 1},
			PriorityList, 0)
		iq := mustEQ(t, init)
		md, err := init.MDBind(MDSpec{Start: src, EQ: iq})
		if err != nil {
			t.Fatal(err)
		}
		if err := Put(md, 0, uint64(c.size), AckReqFull, mustPhysID(t, tgt), idx, 1, 0, 0, 0); err != nil {
			t.Fatal(err)
		}
		driveUntil(t, 1e7, func() bool { return topsLeft(tgt) == 1 }, func() string { return "no match" }, tgt)
		if top := onlyTop(tgt); top.ctsLen != c.cts {
			t.Fatalf("%d bytes: the CTS asks for %d, want %d", c.size, top.ctsLen, c.cts)
		}
		driveUntil(t, 1e7, func() bool { return topsLeft(tgt) == 0 && opsLeft(init) == 0 },
			func() string { return "the put never completed" }, init, tgt)
		if got := tgt.Splits() == 1; got != c.split {
			t.Fatalf("%d bytes: split %v, want %v", c.size, got, c.split)
		}
		if ev := waitEvent(t, tq); ev.Type != eq.EventPut || ev.NIFail != eq.NIOK || ev.MLength != uint64(c.size) {
			t.Fatalf("%d bytes: target event %+v", c.size, ev)
		}
		if !bytes.Equal(dst, src) {
			t.Fatalf("%d bytes: the entry does not hold the data", c.size)
		}
		if n := pinsOut(tgt) + pinsOut(init); n != 0 {
			t.Fatalf("%d bytes: %d pins left", c.size, n)
		}
	}
}

// TestSplitReviewManySegments: a split put from a descriptor of many uneven
// segments into an entry of maxRequestSegs uneven segments, truncated, lands
// whole (the initiator's part and ours meet inside a segment at both ends).
func TestSplitReviewManySegments(t *testing.T) {
	init, tgt := splitNIs(t)
	tq := mustEQ(t, tgt)
	idx := mustPT(t, tgt, 0, tq)
	var tiov [][]byte
	total := 0
	for i := 0; i < maxRequestSegs; i++ {
		n := 4093 + 37*i
		tiov = append(tiov, make([]byte, n))
		total += n
	}
	mustME(t, tgt, idx, MESpec{Iovecs: tiov, UID: UIDAny, Options: MEOpPut | MEUseOnce | MEEventLinkDisable | MEEventUnlinkDisable, MatchID: anyProc(), MatchBits: 1},
		PriorityList, 0)
	size := total + 12345 // truncated: mlength is the entry's total
	src := make([]byte, size)
	fill(src, 11)
	var iiov [][]byte
	for off, i := 0, 0; off < size; i++ {
		n := min(size-off, 3001+4099*(i%7))
		iiov = append(iiov, src[off:off+n])
		off += n
	}
	if len(iiov) > maxRequestSegs {
		t.Fatalf("%d initiator segments", len(iiov))
	}
	iq := mustEQ(t, init)
	md, err := init.MDBind(MDSpec{Iovecs: iiov, EQ: iq})
	if err != nil {
		t.Fatal(err)
	}
	if err := Put(md, 0, uint64(size), AckReqFull, mustPhysID(t, tgt), idx, 1, 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	driveUntil(t, 1e7, func() bool { return tgt.Splits() == 1 && topsLeft(tgt) == 0 && opsLeft(init) == 0 },
		func() string { return "the put never completed split" }, init, tgt)
	if ev := waitEvent(t, tq); ev.Type != eq.EventPut || ev.NIFail != eq.NIOK || ev.MLength != uint64(total) {
		t.Fatalf("target event %+v, want a PUT of %d", ev, total)
	}
	var got []byte
	for _, b := range tiov {
		got = append(got, b...)
	}
	if !bytes.Equal(got, src[:total]) {
		t.Fatal("the entry does not hold the first mlength bytes")
	}
	if n := pinsOut(tgt) + pinsOut(init); n != 0 {
		t.Fatalf("%d pins left", n)
	}
}

// heldSplit starts a split put of size bytes with ack and holds the target's
// READ of its second part queued; it returns once the initiator's FIN is in.
func heldSplit(t *testing.T, ack AckReq, size int) (init, tgt *NI, g *gate, tq, iq *EQ, ct *CT, m *ME, md *MD, dst, src []byte) {
	t.Helper()
	init, tgt = splitNIs(t)
	g, _ = gatePeer(t, tgt, init)
	g.hold.Store(true)
	dst, src = make([]byte, size), make([]byte, size)
	fill(src, 13)
	tq = mustEQ(t, tgt)
	idx := mustPT(t, tgt, 0, tq)
	m = mustME(t, tgt, idx, MESpec{Start: dst, UID: UIDAny, Options: MEOpPut | MEEventLinkDisable | MEEventUnlinkDisable, MatchID: anyProc(), MatchBits: 1},
		PriorityList, 0)
	iq = mustEQ(t, init)
	var err error
	if ct, err = init.CTAlloc(); err != nil {
		t.Fatal(err)
	}
	md, err = init.MDBind(MDSpec{Start: src, EQ: iq, CT: ct, Options: MDEventCTAck | MDEventCTSend})
	if err != nil {
		t.Fatal(err)
	}
	if err := Put(md, 0, uint64(size), ack, mustPhysID(t, tgt), idx, 1, 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	driveUntil(t, 1e7, func() bool {
		top := onlyTop(tgt)
		if top == nil {
			return false
		}
		fin, _ := splitState(tgt, top)
		return fin
	}, func() string { return "the FIN never came" }, init, tgt)
	if tgt.Splits() != 1 {
		t.Fatalf("%d splits", tgt.Splits())
	}
	return
}

// TestSplitReviewSendWaitsForRead: with the target's READ of the second part
// still queued after the initiator's FIN, nothing completes: no SEND (the
// initiator must keep its buffer), no ACK or counting, no PUT event, the entry
// is in use and the descriptor busy. Once the READ goes, all of it comes, with
// the data in place, for every kind of ack.
func TestSplitReviewSendWaitsForRead(t *testing.T) {
	for _, ack := range []AckReq{AckReqFull, NoAckReq, OCAckReq} {
		init, tgt, g, tq, iq, ct, m, md, dst, src := heldSplit(t, ack, 256<<10+3)
		if g.posted.Load() != 0 {
			t.Fatal("the READ went out while held")
		}
		if n := iq.q.Len(); n != 0 {
			t.Fatalf("ack %d: %d initiator events before the target read its part", ack, n)
		}
		if v, _ := ct.Get(); v.Success != 0 || v.Failure != 0 {
			t.Fatalf("ack %d: counter %+v before the target read its part", ack, v)
		}
		if n := tq.q.Len(); n != 0 {
			t.Fatalf("ack %d: %d target events before the data is in", ack, n)
		}
		if opsLeft(init) != 1 || topsLeft(tgt) != 1 {
			t.Fatalf("ack %d: %d ops, %d tops", ack, opsLeft(init), topsLeft(tgt))
		}
		if err := m.Unlink(); !errors.Is(err, InUse) {
			t.Fatalf("ack %d: unlinking the entry being read into: %v, want IN_USE", ack, err)
		}
		g.hold.Store(false)
		driveUntil(t, 1e7, func() bool { return topsLeft(tgt) == 0 && opsLeft(init) == 0 },
			func() string { return "the put never completed" }, init, tgt)
		if g.posted.Load() == 0 {
			t.Fatal("no READ posted")
		}
		if !bytes.Equal(dst, src) {
			t.Fatalf("ack %d: the entry does not hold the data", ack)
		}
		if ev := waitEvent(t, tq); ev.Type != eq.EventPut || ev.NIFail != eq.NIOK {
			t.Fatalf("ack %d: target event %+v", ack, ev)
		}
		if ev := waitEvent(t, iq); ev.Type != eq.EventSend || ev.NIFail != eq.NIOK {
			t.Fatalf("ack %d: initiator event %+v, want SEND", ack, ev)
		}
		if ack == AckReqFull {
			if ev := waitEvent(t, iq); ev.Type != eq.EventAck || ev.NIFail != eq.NIOK || ev.MLength != uint64(len(src)) {
				t.Fatalf("initiator event %+v, want ACK", ev)
			}
		}
		want := uint64(1)
		if ack != NoAckReq {
			want = 2
		}
		if v, _ := ct.Get(); v.Success != want || v.Failure != 0 {
			t.Fatalf("ack %d: counter %+v, want %d successes", ack, v, want)
		}
		if err := m.Unlink(); err != nil {
			t.Fatalf("ack %d: unlink after completion: %v", ack, err)
		}
		if err := md.Release(); err != nil {
			t.Fatalf("ack %d: MD release after completion: %v", ack, err)
		}
		if n := pinsOut(tgt) + pinsOut(init); n != 0 {
			t.Fatalf("ack %d: %d pins left", ack, n)
		}
	}
}

// TestSplitReviewQueuedReadFails: a split put whose queued READ the provider
// rejects when the queue is flushed (after the FIN) completes once, failed, at
// both ends, its pin released.
func TestSplitReviewQueuedReadFails(t *testing.T) {
	init, tgt, g, tq, iq, _, m, _, _, _ := heldSplit(t, AckReqFull, 300<<10)
	g.fail.Store(true)
	g.hold.Store(false)
	driveUntil(t, 1e7, func() bool { return topsLeft(tgt) == 0 && opsLeft(init) == 0 },
		func() string { return "the put never completed" }, init, tgt)
	if ev := waitEvent(t, tq); ev.Type != eq.EventPut || ev.NIFail != eq.NIUndeliverable {
		t.Fatalf("target event %+v, want PUT failed", ev)
	}
	for _, want := range []eq.EventKind{eq.EventSend, eq.EventAck} {
		if ev := waitEvent(t, iq); ev.Type != want {
			t.Fatalf("initiator event %+v, want %v", ev, want)
		} else if want == eq.EventAck && ev.NIFail != eq.NIUndeliverable {
			t.Fatalf("ACK %+v, want NI_UNDELIVERABLE", ev)
		}
	}
	for i := 0; i < 100; i++ {
		tgt.progressOnce(true)
		init.progressOnce(true)
	}
	if n := tq.q.Len() + iq.q.Len(); n != 0 {
		t.Fatalf("%d more events", n)
	}
	if n := pinsOut(tgt) + pinsOut(init); n != 0 {
		t.Fatalf("%d pins left", n)
	}
	if err := m.Unlink(); err != nil {
		t.Fatal(err)
	}
}

// TestSplitReviewSecondReadRejected: when the provider takes the first of a
// split put's READs and rejects the second, the put waits for the first READ and
// the FIN, then completes failed once.
func TestSplitReviewSecondReadRejected(t *testing.T) {
	init, tgt := splitNIs(t)
	g, _ := gatePeer(t, tgt, init)
	g.failNth = 2
	tq := mustEQ(t, tgt)
	idx := mustPT(t, tgt, 0, tq)
	const size = 512 << 10
	dst, src := make([]byte, size), make([]byte, size)
	m := mustME(t, tgt, idx, MESpec{Start: dst, UID: UIDAny, Options: MEOpPut | MEEventLinkDisable | MEEventUnlinkDisable, MatchID: anyProc(), MatchBits: 1},
		PriorityList, 0)
	iq := mustEQ(t, init)
	// Segments of 64 KiB: the second half is four READs.
	var iov [][]byte
	for off := 0; off < size; off += 64 << 10 {
		iov = append(iov, src[off:off+64<<10])
	}
	md, err := init.MDBind(MDSpec{Iovecs: iov, EQ: iq})
	if err != nil {
		t.Fatal(err)
	}
	if err := Put(md, 0, size, AckReqFull, mustPhysID(t, tgt), idx, 1, 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	driveUntil(t, 1e7, func() bool { return g.tried.Load() >= 2 }, func() string { return "no READs" }, tgt)
	if top := onlyTop(tgt); top == nil {
		t.Fatal("the put completed before its FIN")
	} else if fin, p := splitState(tgt, top); fin || p < 1 || p > 2 {
		t.Fatalf("FIN %v, %d pending: want the FIN and at most the first READ", fin, p)
	}
	driveUntil(t, 1e7, func() bool { return topsLeft(tgt) == 0 && opsLeft(init) == 0 },
		func() string { return "the put never completed" }, init, tgt)
	if ev := waitEvent(t, tq); ev.Type != eq.EventPut || ev.NIFail != eq.NIUndeliverable {
		t.Fatalf("target event %+v, want PUT failed", ev)
	}
	if n := tq.q.Len(); n != 0 {
		t.Fatalf("%d more target events", n)
	}
	if n := pinsOut(tgt) + pinsOut(init); n != 0 {
		t.Fatalf("%d pins left", n)
	}
	if err := m.Unlink(); err != nil {
		t.Fatal(err)
	}
}

// TestSplitReviewCTSRejected: when the provider rejects a split put's CTS (the
// connection otherwise up), the target posts none of its READs, and the put
// completes failed once, its pin released and its entry free.
func TestSplitReviewCTSRejected(t *testing.T) {
	init, tgt := splitNIs(t)
	g, pr := gatePeer(t, tgt, init)
	noMessageSends(t, pr)
	g.failSends.Store(true)
	tq := mustEQ(t, tgt)
	idx := mustPT(t, tgt, 0, tq)
	dst, src := make([]byte, 256<<10), make([]byte, 256<<10)
	m := mustME(t, tgt, idx, MESpec{Start: dst, UID: UIDAny, Options: MEOpPut | MEEventLinkDisable | MEEventUnlinkDisable, MatchID: anyProc(), MatchBits: 1},
		PriorityList, 0)
	md, err := init.MDBind(MDSpec{Start: src})
	if err != nil {
		t.Fatal(err)
	}
	if err := Put(md, 0, uint64(len(src)), NoAckReq, mustPhysID(t, tgt), idx, 1, 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	driveUntil(t, 1e7, func() bool { return tgt.Splits() == 1 && topsLeft(tgt) == 0 },
		func() string { return "the put never failed" }, tgt)
	if ev := waitEvent(t, tq); ev.Type != eq.EventPut || ev.NIFail != eq.NIUndeliverable {
		t.Fatalf("target event %+v, want PUT failed", ev)
	}
	for i := 0; i < 100; i++ {
		tgt.progressOnce(true)
	}
	if n := g.posted.Load() + g.tried.Load(); n != 0 {
		t.Fatalf("%d READs posted for a put whose CTS never went", n)
	}
	if n := tq.q.Len(); n != 0 {
		t.Fatalf("%d more target events", n)
	}
	if n := pinsOut(tgt); n != 0 {
		t.Fatalf("%d pins left", n)
	}
	if err := m.Unlink(); err != nil {
		t.Fatal(err)
	}
}

// TestSplitReviewFiniInFlight: finalizing the target while a split put's READ
// is still queued releases its pin and leaves nothing behind to run.
func TestSplitReviewFiniInFlight(t *testing.T) {
	init, tgt, _, _, _, _, _, _, _, _ := heldSplit(t, AckReqFull, 256<<10)
	top := onlyTop(tgt)
	tgt.shutdown()
	if top.pinned != nil {
		t.Fatal("the split put's pin survived the NI")
	}
	for i := 0; i < 100; i++ {
		init.progressOnce(true)
	}
}

// TestSplitReviewSelf: a long put an NI makes to itself is split like any other
// over shared memory and lands whole.
func TestSplitReviewSelf(t *testing.T) {
	ni, _ := splitNIs(t)
	tq := mustEQ(t, ni)
	idx := mustPT(t, ni, 0, tq)
	const size = 384<<10 + 77
	dst, src := make([]byte, size), make([]byte, size)
	fill(src, 17)
	mustME(t, ni, idx, MESpec{Start: dst, UID: UIDAny, Options: MEOpPut | MEUseOnce | MEEventLinkDisable | MEEventUnlinkDisable,
		MatchID: anyProc(), MatchBits: 1}, PriorityList, 0)
	iq := mustEQ(t, ni)
	md, err := ni.MDBind(MDSpec{Start: src, EQ: iq})
	if err != nil {
		t.Fatal(err)
	}
	if err := Put(md, 0, size, AckReqFull, mustPhysID(t, ni), idx, 1, 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	driveUntil(t, 1e7, func() bool { return topsLeft(ni) == 0 && opsLeft(ni) == 0 },
		func() string { return "the put never completed" }, ni)
	if ev := waitEvent(t, tq); ev.Type != eq.EventPut || ev.NIFail != eq.NIOK {
		t.Fatalf("target event %+v", ev)
	}
	if !bytes.Equal(dst, src) {
		t.Fatal("the entry does not hold the data")
	}
	if ni.Splits() != 1 {
		t.Fatalf("%d splits, want 1", ni.Splits())
	}
}

// TestSplitReviewInitiatorGoes: an initiator finalized while the target's READ
// of its second part is still queued (after the FIN) takes its registrations
// with it; the READ then finds nothing to read, and the target's put completes
// failed once, its pin released.
func TestSplitReviewInitiatorGoes(t *testing.T) {
	init, tgt, g, tq, _, _, _, _, _, _ := heldSplit(t, AckReqFull, 256<<10)
	init.shutdown()
	if n := pinsOut(init); n != 0 {
		t.Fatalf("%d pins left at the finalized initiator", n)
	}
	g.hold.Store(false)
	driveUntil(t, 1e7, func() bool { return topsLeft(tgt) == 0 },
		func() string { return "the put never completed" }, tgt)
	if ev := waitEvent(t, tq); ev.Type != eq.EventPut || ev.NIFail != eq.NIUndeliverable {
		t.Fatalf("target event %+v, want PUT failed", ev)
	}
	for i := 0; i < 100; i++ {
		tgt.progressOnce(true)
	}
	if n := tq.q.Len(); n != 0 {
		t.Fatalf("%d more target events", n)
	}
	if n := pinsOut(tgt); n != 0 {
		t.Fatalf("%d pins left", n)
	}
}
