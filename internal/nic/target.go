package nic

import (
	"sync/atomic"

	"github.com/goportals/goportals/eq"
	"github.com/goportals/goportals/internal/mdreg"
	"github.com/goportals/goportals/internal/verbs"
	"github.com/goportals/goportals/me"
)

// targetOp is a target operation waiting for its RDMA transfers (a long put's
// READs, a long get's WRITEs) before its events and answer.
type targetOp struct {
	id      uint64
	pr      *peer
	h       header
	t       *pt
	e       *entry
	res     me.MatchResult
	evs     []me.Event
	pending int
	fail    eq.NIFail
	pinned  *mdreg.Pinned
	push    bool   // a pushed long put: waits for the initiator's msgFin (and a split one for its READs)
	finDone bool   // a pushed put's msgFin came (or never will: the peer failed)
	cts     []byte // a pushed put's msgCTS payload (our segments), sent by postTarget
	ctsLen  uint64 // the bytes the msgCTS asks the initiator to write (all, or a split put's first part)
}

// readsLeft is how many of a split put's READs are still out (pending counts them
// and, until it comes, the FIN). Called with ni.mu held.
func (top *targetOp) readsLeft() int {
	if top.finDone {
		return top.pending
	}
	return top.pending - 1
}

// testHoldLong, when set by a test, runs on the progress path once a long transfer
// is accounted in flight and before its RDMA requests are posted: the test holds it
// there to observe calls made while the data is still moving.
var testHoldLong atomic.Pointer[func()]

var meOps = [...]me.Op{msgPut: me.OpKindPut, msgGet: me.OpKindGet, msgAtomic: me.OpKindAtomic,
	msgFetch: me.OpKindFetchAtomic, msgSwap: me.OpKindSwap}

// handleRequest runs the target side of one incoming request. Called from progress
// without ni.mu; data placement and events happen under it, the answer is sent
// after.
func (ni *NI) handleRequest(pr *peer, h *header, payload []byte) {
	switch h.kind {
	case msgCTS: // (the halves of a pushed long put are not requests)
		ni.handleCTS(pr, h, payload)
		return
	case msgFin:
		ni.handleFin(pr, h)
		return
	}
	if testRequestHandled.Load() != nil {
		// (a load first: testAfterRequest swaps, an atomic write per request)
		defer testAfterRequest()
	}
	if h.flags&hfLong == 0 && ((h.kind == msgGet && h.length > eagerMax) ||
		((h.kind == msgPut || h.kind == msgAtomic || h.kind == msgFetch) && uint64(len(payload)) != h.length)) {
		// An inline request must carry exactly its data (a get's reply must fit inline).
		ni.status[SRMalformed].Add(1)
		ni.answerHandled(pr, h, eq.NIDropped, 0, 0, 0, nil)
		return
	}
	if h.kind >= msgAtomic && h.kind <= msgSwap {
		if err := checkAtomic(eq.AtomicOp(h.atomOp), eq.AtomicType(h.atomType), h.length, h.kind == msgSwap); err != nil ||
			(h.kind == msgSwap && h.atomOp >= uint8(eq.OpCSwap) && uint64(len(payload)) < h.length+uint64(eq.AtomicType(h.atomType).Size())) ||
			h.flags&hfLong != 0 {
			ni.status[SRMalformed].Add(1)
			ni.answerHandled(pr, h, eq.NIDropped, 0, 0, 0, nil)
			return
		}
	}
	ni.mu.Lock()
	t := ni.ptAt(PTIndex(h.pt))
	if t == nil || !t.enabled {
		// An index nobody allocated drops the message; PT_DISABLED is for an entry
		// that exists and is disabled.
		fail := eq.NIDropped
		if t != nil {
			fail = eq.NIPTDisabled
		}
		ni.status[SRDropCount].Add(1)
		ni.mu.Unlock()
		ni.answerHandled(pr, h, fail, 0, 0, 0, nil)
		return
	}
	if t.opts&PTFlowCtrl != 0 && t.eq != nil && t.eq.q.Avail() == 0 {
		// No room for the event this message would post: flow control, before the
		// message consumes anything.
		t.enabled = false
		t.eq.q.Post(&eq.Event{Type: eq.EventPTDisabled, PTIndex: h.pt, NIFail: eq.NIPTDisabled,
			MatchBits: h.match, RLength: h.length, HdrData: h.hdrData})
		ni.status[SRDropCount].Add(1)
		ni.mu.Unlock()
		ni.answerHandled(pr, h, eq.NIPTDisabled, 0, 0, 0, nil)
		return
	}
	// The initiator is the process at the other end of the connection the message
	// came on, whatever its header claims.
	// (field by field: a composite literal is built on the stack and copied, and
	// the copy's wide loads of the narrow stores just made stall)
	mh := &ni.mh
	mh.Op, mh.UID, mh.MatchBits, mh.RemoteOffset = meOps[h.kind], me.UID(h.uid), h.match, h.roff
	mh.Length, mh.HdrData, mh.AtomicOp, mh.AtomicType, mh.Cookie = h.length, h.hdrData, h.atomOp, h.atomType, 0
	mh.Initiator = ni.idOfPeer(pr)
	res, evs := t.table.Match(mh, ni.evbuf[:0])
	if res.Outcome != me.OutcomeMatched {
		fail := eq.NIDropped
		switch res.Outcome {
		case me.OutcomePermViolation:
			fail = eq.NIPermViolation
			ni.status[SRPermissionsViolations].Add(1)
		case me.OutcomeOpViolation:
			fail = eq.NIOpViolation
			ni.status[SROperationsViolations].Add(1)
		case me.OutcomeInvalidHeader:
			ni.status[SRMalformed].Add(1)
		default:
			ni.status[SRDropCount].Add(1)
		}
		if t.opts&PTFlowCtrl != 0 && (res.Outcome == me.OutcomeNoMatch || res.Outcome == me.OutcomeUnexpectedFull) {
			// Flow control: no resources. Disable the entry and tell both sides.
			t.enabled = false
			fail = eq.NIPTDisabled
			if len(evs) == 0 && t.eq != nil {
				t.eq.q.Post(&eq.Event{Type: eq.EventPTDisabled, PTIndex: h.pt, NIFail: eq.NIPTDisabled,
					MatchBits: h.match, RLength: h.length, HdrData: h.hdrData})
			}
		} else {
			// Without flow control a full unexpected list is a plain drop: the entry
			// stays enabled and nothing reports PT_DISABLED.
			evs = evs[:0]
		}
		ni.deliverAll(t, evs)
		ni.mu.Unlock()
		ni.answerHandled(pr, h, fail, 0, 0, 0, nil)
		return
	}
	e := t.entries[res.Handle]
	if e == nil { // cannot happen: every handle of the table has engine state
		ni.status[SRMalformed].Add(1)
		ni.deliverAll(t, evs)
		ni.mu.Unlock()
		ni.answerHandled(pr, h, eq.NIDropped, 0, 0, 0, nil)
		return
	}
	if h.flags&hfLong != 0 && res.MLength > 0 {
		top, wrs := ni.startLong(pr, h, payload, t, e, res, evs)
		ni.mu.Unlock()
		if hook := testHoldLong.Load(); hook != nil && (wrs != nil || top.cts != nil) {
			(*hook)()
		}
		ni.postTarget(top, wrs)
		ni.directSeen(pr) // handled: its answer comes when the data moved (and it is tracked)
		return
	}
	var reply []byte
	var merr error // an access to raw memory that faulted
	mlen := res.MLength
	switch h.kind {
	case msgPut:
		if mlen > uint64(len(payload)) {
			mlen = uint64(len(payload))
		}
		if off := res.LocalOffset; e.flat != nil && off <= uint64(len(e.flat)) && mlen <= uint64(len(e.flat))-off {
			copy(e.flat[off:off+mlen], payload[:mlen])
		} else {
			_, merr = e.mem.WriteAt(payload[:mlen], off)
		}
	case msgGet:
		reply = ni.scratch(int(mlen))
		_, merr = e.mem.ReadAt(reply, res.LocalOffset)
	case msgAtomic, msgFetch, msgSwap:
		data := payload
		var cond []byte
		if h.kind == msgSwap && h.atomOp >= uint8(eq.OpCSwap) {
			// Checked on entry: the payload holds length bytes, then the operand.
			data, cond = payload[:h.length], payload[h.length:]
		}
		if mlen > uint64(len(data)) {
			mlen = uint64(len(data))
		}
		old := ni.scratch(int(mlen))
		if n, ok := targetAtomicInPlace(e.mem, res.LocalOffset, mlen, eq.AtomicOp(h.atomOp), eq.AtomicType(h.atomType),
			data[:mlen], cond, old); ok {
			mlen = n // aligned words: atomic with direct initiators (direct_atomic.go)
		} else {
			if _, merr = e.mem.ReadAt(old, res.LocalOffset); merr != nil {
				break
			}
			cur := append(ni.scratch2(int(mlen))[:0], old...)
			mlen = uint64(applyAtomic(eq.AtomicOp(h.atomOp), eq.AtomicType(h.atomType), cur, data[:mlen], cond))
			_, merr = e.mem.WriteAt(cur[:mlen], res.LocalOffset)
		}
		if h.kind != msgAtomic {
			reply = old[:mlen]
		}
	}
	if merr != nil {
		// The entry's raw memory is not mapped there: the operation fails with
		// NI_SEGV on both sides.
		ni.status[SRMalformed].Add(1)
		ni.deliverEvents(t, evs, eq.NISegv, e)
		ni.evbuf = evs[:0]
		ni.mu.Unlock()
		ni.answerHandled(pr, h, eq.NISegv, 0, res.LocalOffset, uint8(res.List), nil)
		return
	}
	ni.deliverEvents(t, evs, eq.NIOK, e)
	ni.evbuf = evs[:0]
	ni.mu.Unlock()
	ack := !res.AckDisabled
	ni.answerHandled(pr, h, eq.NIOK, mlen, res.LocalOffset, uint8(res.List), reply, ack)
}

// answerHandled answers a request handleRequest is done with: it counts the request
// as seen first (write-after-write order for direct access, direct_init.go), so that an
// initiator that has the answer may go direct at once.
func (ni *NI) answerHandled(pr *peer, h *header, fail eq.NIFail, mlength, off uint64, list uint8, data []byte, withAck ...bool) {
	ni.directSeen(pr)
	ni.answer(pr, h, fail, mlength, off, list, data, withAck...)
}

// answer sends the ACK or REPLY of a request. withAck false suppresses the ACK of a
// put or atomic (the entry disabled acks); a long put always answers, since its
// initiator waits to reuse its buffer.
func (ni *NI) answer(pr *peer, h *header, fail eq.NIFail, mlength, off uint64, list uint8, data []byte, withAck ...bool) {
	switch h.kind {
	case msgGet, msgFetch, msgSwap:
		a := header{kind: msgReply, opid: h.opid, fail: uint8(fail), mlength: mlength, roff: off, list: list, pt: h.pt}
		pr.sendOrQueue(&a, data)
		return
	}
	wants := AckReq(h.ack) != NoAckReq && (len(withAck) == 0 || withAck[0])
	if !wants && h.flags&hfLong == 0 && fail == eq.NIOK && AckReq(h.ack) == NoAckReq {
		return // (the common eager put without ack: before any header is built)
	}
	a := header{kind: msgAck, opid: h.opid, fail: uint8(fail), mlength: mlength, roff: off, list: list, pt: h.pt}
	if !wants && fail == eq.NIOK {
		a.flags = hfNoAck
	}
	if AckReq(h.ack) == NoAckReq && fail != eq.NIOK && h.flags&hfLong == 0 {
		return // nobody waits for it
	}
	pr.sendOrQueue(&a)
}

// startLong pins the entry's range and builds the RDMA READs (put) or WRITEs (get)
// against the initiator's segments; postTarget posts them after the engine lock is
// released. A failure completes the operation at once (wrs is then nil). Called
// with ni.mu held.
func (ni *NI) startLong(pr *peer, h *header, payload []byte, t *pt, e *entry, res me.MatchResult, evs []me.Event) (*targetOp, []verbs.SendWR) {
	top := &targetOp{pr: pr, h: *h, t: t, e: e, res: res, evs: append([]me.Event(nil), evs...)}
	ni.evbuf = evs[:0]
	ni.nextOp++
	top.id = ni.nextOp
	// Until completeTarget: the entry cannot be unlinked, the portal table entry
	// cannot finish disabling, and an unexpected header this message left cannot be
	// claimed (its data is not there yet).
	e.inflight++
	t.active++
	if res.HeaderKept {
		t.table.SetBusy(res.Unexpected, true)
	}
	fail := func(f eq.NIFail) (*targetOp, []verbs.SendWR) {
		ni.status[SRMalformed].Add(1)
		top.fail = f
		ni.completeTarget(top)
		return top, nil
	}
	reg, err := ni.registry()
	if err != nil {
		return fail(eq.NIUndeliverable)
	}
	p, err := reg.Pin(e.mem, res.LocalOffset, res.MLength)
	if err != nil {
		if e.mem.IsRaw() {
			return fail(eq.NISegv) // the range is not (all) mapped
		}
		return fail(eq.NIUndeliverable)
	}
	top.pinned = p
	if h.kind == msgPut && h.flags&hfPush != 0 && p.NumSegments() <= maxRequestSegs {
		// Pushed: the initiator writes into our range once it has its segments
		// (the first ctsLen bytes). Split: we read the rest meanwhile.
		top.ctsLen = res.MLength
		var reads []verbs.SendWR
		if splitPuts && res.MLength >= splitMin && copiesOnCPU(pr) {
			cut := res.MLength / 2 &^ (splitAlign - 1)
			if wrs, ok := pairSegments(p.SGEs(nil), payload, cut, res.MLength-cut, verbs.OpRDMARead,
				widTarget|top.id, verbs.SendSignaled); ok {
				top.ctsLen, reads = cut, wrs
				ni.splits.Add(1)
			}
		}
		segs := p.Remote(nil)
		top.cts = make([]byte, 16*len(segs))
		for i, s := range segs {
			putSeg(top.cts[16*i:], s)
		}
		top.push, top.pending = true, 1+len(reads)
		ni.tops[top.id] = top
		ni.pushHint.Store(true)
		return top, reads
	}
	op := verbs.OpRDMARead
	if h.kind == msgGet {
		op = verbs.OpRDMAWrite
	}
	wrs, ok := pairSegments(p.SGEs(nil), payload, 0, res.MLength, op, widTarget|top.id, verbs.SendSignaled)
	if !ok {
		return fail(eq.NIDropped)
	}
	top.pending = len(wrs)
	ni.tops[top.id] = top
	ni.longs.Add(1)
	return top, wrs
}

// postTarget posts a target operation's RDMA requests, or sends the answer of one
// that already completed. Called without ni.mu: a full send queue makes post run
// progress.
func (ni *NI) postTarget(top *targetOp, wrs []verbs.SendWR) {
	if top.cts != nil {
		cts := top.cts
		top.cts = nil
		h := header{kind: msgCTS, opid: top.h.opid, hdrData: top.id, mlength: top.ctsLen, pt: top.h.pt}
		if err := top.pr.sendOrQueue(&h, cts); err != nil {
			// No data and no FIN will come, and a split put's READs are not
			// posted: the operation fails now (unless the peer's failure
			// completed it already).
			ni.mu.Lock()
			done := ni.tops[top.id] == top
			if done {
				top.fail = eq.NIUndeliverable
				delete(ni.tops, top.id)
				ni.completeTarget(top)
			}
			ni.mu.Unlock()
			if done {
				ni.sendAnswer(top)
			}
			return
		}
		if len(wrs) == 0 {
			return
		}
		// A split put: our READs of its second part go out after the CTS, so
		// the initiator's write and ours run at the same time.
	}
	if wrs == nil {
		ni.sendAnswer(top)
		return
	}
	for i, wr := range wrs {
		if err := top.pr.postOrQueue(wr); err != nil {
			ni.mu.Lock()
			top.fail = eq.NIUndeliverable
			top.pending -= len(wrs) - i
			done := top.pending == 0
			if done {
				delete(ni.tops, top.id)
				ni.completeTarget(top)
			}
			ni.mu.Unlock()
			if done {
				ni.sendAnswer(top)
			}
			return
		}
	}
}

// targetDone accounts one finished RDMA request of a target operation.
func (ni *NI) targetDone(id uint64, ok bool) {
	ni.mu.Lock()
	top := ni.tops[id]
	if top == nil {
		ni.mu.Unlock()
		return
	}
	if !ok {
		top.fail = eq.NIUndeliverable
	}
	if top.pending--; top.pending > 0 {
		ni.mu.Unlock()
		return
	}
	delete(ni.tops, id)
	ni.completeTarget(top)
	ni.mu.Unlock()
	ni.sendAnswer(top)
}

// completeTarget posts a finished long operation's events and releases its
// registration. Called with ni.mu held; sendAnswer follows without it.
func (ni *NI) completeTarget(top *targetOp) {
	if top.pinned != nil {
		top.pinned.Release()
		top.pinned = nil
	}
	ni.deliverEvents(top.t, top.evs, top.fail, top.e)
	if top.res.HeaderKept {
		top.t.table.SetBusy(top.res.Unexpected, false)
	}
	top.e.inflight--
	top.t.active--
}

// waitEngine drives progress with ni.mu released until done holds; it is called and
// returns with ni.mu held. It reports false, without waiting further, once the NI is
// finalized.
func (ni *NI) waitEngine(done func() bool) bool {
	for !done() {
		if ni.dead.Load() {
			return false
		}
		ni.mu.Unlock()
		ni.assist()
		ni.mu.Lock()
	}
	return true
}

// sendAnswer sends the ACK or REPLY of a finished long operation.
func (ni *NI) sendAnswer(top *targetOp) {
	mlen := top.res.MLength
	if top.fail != eq.NIOK {
		mlen = 0
	}
	ni.answer(top.pr, &top.h, top.fail, mlen, top.res.LocalOffset, uint8(top.res.List), nil, !top.res.AckDisabled)
}

// scratch returns a reusable buffer of n bytes for the engine (under ni.mu).
func (ni *NI) scratch(n int) []byte {
	if cap(ni.buf1) < n {
		ni.buf1 = make([]byte, n)
	}
	return ni.buf1[:n]
}

func (ni *NI) scratch2(n int) []byte {
	if cap(ni.buf2) < n {
		ni.buf2 = make([]byte, n)
	}
	return ni.buf2[:n]
}
