package soft

import (
	"errors"
	"sync/atomic"
	"syscall"

	"github.com/goportals/goportals/internal/verbs"
)

// Message opcodes in the ring. RDMA READ needs none: it always goes by
// cross-memory attach.
const (
	opSend       = 1 + iota // a fragment of a SEND: a = offset, b = total length
	opWrite                 // RDMA WRITE through the ring (payload <= maxPayload)
	opImm                   // the immediate of an RDMA WRITE done by cross-memory attach
	opAtomicReq             // a = compare/add, b = swap, flags = atomFAdd or atomCSwap
	opAtomicResp            // a = old value
	opCorrupt    = 0xff     // set by peek for a header that fails validation
)

// Message flags.
const (
	flFirst = 1 << iota
	flLast
	flImm
	flHdr // a single-fragment SEND whose first bytes ride in the header slot (ring.pushInline)
)

const (
	atomFAdd  = 0
	atomCSwap = 1
)

// progress runs one round on the queue pair: receive what the peer sent, send
// pending responses, issue queued work, complete what finished. The tail is read
// before the inbound ring is drained: a NAK is recorded before the consumer moves
// its tail, so every message below the tail read here has its NAK visible.
func (q *qp) progress() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.progressLocked()
}

// progressLocked is progress with q.mu held (PostSend runs it after a transfer it
// completed synchronously, so the completion needs no progress goroutine).
func (q *qp) progressLocked() int {
	if q.State() != verbs.QPReady {
		return 0
	}
	// Unsignaled successes need no completion: their entries are reaped lazily
	// (when something waits for a completion, or the queue fills, or a NAK is
	// posted), which spares reading the tail line the peer writes per message.
	needReap := q.signaled > 0 || q.waiting > 0 || q.sqTail-q.sqHead > uint64(len(q.sq))/2 ||
		atomic.LoadUint64(q.out.errToken()) != 0
	var tail uint64
	if needReap {
		tail = q.out.consumed()
	}
	n := q.drain()
	n += q.flushPending()
	n += q.issue()
	if needReap {
		n += q.reap(tail)
	}
	q.updateBusy()
	if q.State() == verbs.QPReady && (q.peerDead || atomic.LoadUint32(q.in.closedWord()) != 0) && !q.msgWait.Load() {
		// The peer failed or closed. It recorded any NAK and moved its tail before
		// it said so: complete what it answered, then fail what is outstanding. An
		// idle queue pair stays ready, as on RC hardware, until its next send.
		q.reap(q.out.consumed())
		if q.sqHead < q.sqTail || q.rqHead < q.rqTail {
			q.peerGone()
			n++
		}
	}
	return n
}

// hasWork is the lock-free idle check of a progress round: a message from the
// peer, local work in progress, a NAK or a peer that went away. Called under the
// context's progress lock, which keeps the rings mapped.
func (q *qp) hasWork() bool {
	return q.in.ready() || q.busy.Load() || atomic.LoadUint64(q.out.errToken()) != 0 ||
		atomic.LoadUint32(q.in.closedWord()) != 0 || q.dead.Load()
}

// updateBusy records whether a progress round has local work to do: responses or
// sends to issue, signaled or fenced work to complete, or a send queue half full of
// unreaped entries. Called with q.mu held.
func (q *qp) updateBusy() {
	busy := len(q.pend) > 0 || q.sqIss < q.sqTail || q.signaled > 0 || q.waiting > 0 ||
		q.sqTail-q.sqHead > uint64(len(q.sq))/2
	if q.busy.Load() != busy { // a store only on change: the poll loop reads it
		q.busy.Store(busy)
	}
	if busy && q.out != nil && atomic.LoadUint32(q.out.wantWord()) == 0 {
		// Completions wait for the peer to consume: ask it to wake us when it does.
		atomic.StoreUint32(q.out.wantWord(), 1)
	}
}

// issue issues queued entries in order while they fit. Called with q.mu held.
func (q *qp) issue() int {
	if q.out == nil { // destroyed: nothing to issue into
		return 0
	}
	n := 0
	head := q.out.head
	for q.sqIss < q.sqTail && q.State() == verbs.QPReady {
		e := &q.sq[q.sqIss%uint64(len(q.sq))]
		if e.state == esQueued && e.wr.Flags&verbs.SendFence != 0 && q.waiting > 0 {
			break
		}
		if q.peerDead || atomic.LoadUint32(q.in.closedWord()) != 0 {
			if q.msgWait.Load() {
				break // the peer's last messages are handed out first (see msgWait)
			}
			// The peer recorded any NAK and its tail before it failed: report
			// what it answered first, then fail what it never will.
			q.reap(q.out.consumed())
			if q.State() == verbs.QPReady {
				q.failEntry(e, verbs.StatusRetryExceeded)
			}
			break
		}
		if !q.issueOne(e) {
			break
		}
		q.sqIss++
		n++
	}
	if q.out != nil && q.out.head != head && q.peer != nil {
		wakePeer(q.peer) // only ring messages need the peer; CMA transfers do not
	}
	return n
}

// issueOne issues e, or returns false when it must wait (ring space, or the ring
// to drain before a cross-memory transfer, which must not overtake earlier messages).
func (q *qp) issueOne(e *sendEntry) bool {
	switch e.wr.Opcode {
	case verbs.OpSend, verbs.OpSendWithImm:
		flags := uint8(0)
		if e.wr.Opcode == verbs.OpSendWithImm {
			flags = flImm
		}
		if e.state == esQueued && e.total <= maxPayload {
			// One fragment: its first bytes ride in the header slot.
			if !q.room(int(e.total - min(e.total, hdrInline))) {
				return false
			}
			if !q.gather(e, 0, e.total, 0) {
				return q.failEntry(e, verbs.StatusLocalProtectionError)
			}
			m := msg{op: opSend, flags: flags | flFirst | flLast | flHdr, token: e.token, imm: e.wr.Imm}
			e.endPos = q.out.pushInline(&m, q.parts, int(e.total))
			q.releaseHolds()
			e.state, e.byteLen = esAwaitTail, uint32(e.total)
			return true
		}
		if e.state == esQueued && e.total > maxPayload {
			if !q.gather(e, 0, e.total, 0) { // validate every SGE before the first fragment
				return q.failEntry(e, verbs.StatusLocalProtectionError)
			}
			q.releaseHolds()
		}
		for {
			chunk := min(e.total-e.off, maxPayload)
			if !q.room(int(chunk)) {
				e.state = esIssuing
				return false
			}
			if !q.gather(e, e.off, chunk, 0) {
				return q.failEntry(e, verbs.StatusLocalProtectionError)
			}
			f := flags
			if e.off == 0 {
				f |= flFirst
			}
			if e.off+chunk == e.total {
				f |= flLast
			}
			m := msg{op: opSend, flags: f, token: e.token, a: e.off, b: e.total, imm: e.wr.Imm}
			e.endPos = q.out.push(&m, q.parts, int(chunk))
			q.releaseHolds()
			e.off += chunk
			if e.off == e.total {
				break
			}
		}
		e.state, e.byteLen = esAwaitTail, uint32(e.total)
		return true

	case verbs.OpRDMAWrite, verbs.OpRDMAWriteWithImm:
		imm := e.wr.Opcode == verbs.OpRDMAWriteWithImm
		if e.total <= cmaThreshold {
			if !q.room(int(e.total)) {
				return false
			}
			if !q.gather(e, 0, e.total, 0) {
				return q.failEntry(e, verbs.StatusLocalProtectionError)
			}
			m := msg{op: opWrite, token: e.token, raddr: e.wr.RemoteAddr, rkey: e.wr.RKey, imm: e.wr.Imm}
			if imm {
				m.flags = flImm
			}
			e.endPos = q.out.push(&m, q.parts, int(e.total))
			q.memPos = e.endPos
			q.releaseHolds()
			e.state, e.byteLen = esAwaitTail, uint32(e.total)
			return true
		}
		if e.state == esQueued {
			// As a READ (below): after what our earlier WRITEs and atomics left
			// (write-after-write order), not after earlier SENDs, which place data
			// only in the peer's receive buffers. On a reliable connection the peer
			// may see a WRITE's data before it polls a SEND posted ahead of it; it
			// sees it before any message posted behind it.
			if !q.appliedOut(q.memPos) {
				return false
			}
			q.cmaDone = true
			if st := q.cmaTransfer(e, true); st != verbs.StatusSuccess {
				return q.failEntry(e, st)
			}
			e.byteLen = uint32(e.total)
			if !imm {
				e.state = esDone
				return true
			}
			e.state = esIssuing
		}
		if !q.room(0) {
			return false
		}
		m := msg{op: opImm, token: e.token, imm: e.wr.Imm, b: e.total}
		e.endPos = q.out.push(&m, nil, 0)
		e.state = esAwaitTail
		return true

	case verbs.OpRDMARead:
		// Always by cross-memory attach: a READ must not wait behind the peer's
		// own messages in our inbound ring (a SEND we have no receive for). It
		// reads what our earlier WRITEs and atomics left, so it waits until the
		// peer applied those; earlier SENDs it does not wait for (they place data
		// only in the peer's receive buffers): a READ issued behind answers the
		// peer has not consumed yet runs at once, so the READs of consecutive long
		// transfers follow each other without waiting for the peer to poll. Its
		// completion still comes in order, after theirs.
		if !q.appliedOut(q.memPos) {
			return false
		}
		q.cmaDone = true
		if st := q.cmaTransfer(e, false); st != verbs.StatusSuccess {
			return q.failEntry(e, st)
		}
		e.state, e.byteLen = esDone, uint32(e.total)
		return true

	default: // atomics (validated at post)
		if !q.room(0) {
			return false
		}
		if !q.gather(e, 0, 8, verbs.AccessLocalWrite) {
			return q.failEntry(e, verbs.StatusLocalProtectionError)
		}
		q.releaseHolds()
		m := msg{op: opAtomicReq, flags: atomFAdd, token: e.token, raddr: e.wr.RemoteAddr, rkey: e.wr.RKey,
			a: e.wr.CompareAdd, b: e.wr.Swap}
		if e.wr.Opcode == verbs.OpAtomicCmpSwap {
			m.flags = atomCSwap
		}
		q.memPos = q.out.push(&m, nil, 0)
		e.state = esAwaitResp
		q.waiting++
		return true
	}
}

// room reports whether payload bytes fit in the outbound ring; when not, it asks
// the consumer to wake us when it frees space, then checks once more.
func (q *qp) room(payload int) bool {
	if q.out.space(payload) {
		return true
	}
	atomic.StoreUint32(q.out.wantWord(), 1)
	return q.out.space(payload)
}

// appliedOut reports whether the peer consumed our messages below ring position
// pos.
func (q *qp) appliedOut(pos uint64) bool {
	if q.out.consumedTo(pos) {
		return true
	}
	atomic.StoreUint32(q.out.wantWord(), 1)
	return q.out.consumedTo(pos)
}

// cmaTransfer runs an RDMA WRITE (write) or READ of e by cross-memory attach, after
// checking the rkey, bounds and rights in the peer's published MR table. The peer's
// region is held against deregistration for the duration of the copy.
func (q *qp) cmaTransfer(e *sendEntry, write bool) verbs.Status {
	need, localNeed := verbs.AccessRemoteRead, verbs.AccessLocalWrite
	if write {
		need, localNeed = verbs.AccessRemoteWrite, 0
	}
	hold, ok := q.peer.view.acquire(e.wr.RKey, e.wr.RemoteAddr, e.total, need, q.peer.pd)
	if !ok {
		return verbs.StatusRemoteAccessError
	}
	defer release(hold)
	if !q.gather(e, 0, e.total, localNeed) {
		return verbs.StatusLocalProtectionError
	}
	err := cma(q.peer.pid, q.parts, e.wr.RemoteAddr, write)
	q.releaseHolds()
	switch {
	case err == nil:
		return verbs.StatusSuccess
	case errors.Is(err, syscall.ESRCH):
		return verbs.StatusRetryExceeded
	default:
		return verbs.StatusRemoteAccessError
	}
}

// failEntry completes e with st and moves the queue pair to the error state.
// It returns true: the entry is finished.
func (q *qp) failEntry(e *sendEntry, st verbs.Status) bool {
	q.releaseHolds()
	e.state, e.status = esDone, st
	q.fail(verbs.StatusWorkRequestFlushed)
	return true
}

// reap completes finished entries in order. tail was read before the inbound ring
// was drained.
func (q *qp) reap(tail uint64) int {
	errTok := atomic.LoadUint64(q.out.errToken())
	n := 0
	for q.sqHead < q.sqIss && q.State() == verbs.QPReady {
		e := &q.sq[q.sqHead%uint64(len(q.sq))]
		if errTok != 0 && e.token == errTok && e.state != esDone {
			q.failEntry(e, verbs.Status(atomic.LoadUint32(q.out.errStatus())))
			return n + 1
		}
		if e.state == esAwaitTail && tail >= e.endPos {
			e.state = esDone
		}
		if e.state != esDone {
			break
		}
		if e.wr.Flags&verbs.SendSignaled != 0 {
			q.signaled--
		}
		if e.status != verbs.StatusSuccess || e.wr.Flags&verbs.SendSignaled != 0 {
			q.scq.push(verbs.WorkCompletion{ID: e.wr.ID, Status: e.status, Opcode: verbs.OpcodeOf(e.wr.Opcode),
				ByteLen: e.byteLen, QPNum: q.num})
		}
		q.sqHead++
		n++
	}
	return n
}

// gather sets q.parts to the local bytes [off, off+n) of e's payload, holding each
// region (q.holds) until releaseHolds.
func (q *qp) gather(e *sendEntry, off, n uint64, need verbs.Access) bool {
	q.parts = q.parts[:0]
	if e.wr.Flags&verbs.SendInline != 0 {
		if n > 0 {
			q.parts = append(q.parts, e.inline[off:off+n])
		}
		return true
	}
	return q.sgParts(e.sg, off, n, need, false)
}

// sgParts resolves bytes [off, off+n) of an SGE list into q.parts. inRound says
// the caller runs in a progress round (holds the context's progress lock), where
// regions need no hold (see Context.localInRound).
func (q *qp) sgParts(sg []verbs.SGE, off, n uint64, need verbs.Access, inRound bool) bool {
	q.parts = q.parts[:0]
	for _, s := range sg {
		if n == 0 {
			break
		}
		l := uint64(s.Length)
		if off >= l {
			off -= l
			continue
		}
		take := min(l-off, n)
		var b []byte
		var ok bool
		if inRound {
			b, ok = q.ctx.localInRound(s.LKey, s.Addr+off, take, need, q.pd.id)
		} else {
			var hold *int32
			if b, hold, ok = q.ctx.local(s.LKey, s.Addr+off, take, need, q.pd.id); ok {
				q.holds = append(q.holds, hold)
			}
		}
		if !ok {
			q.releaseHolds()
			return false
		}
		q.parts = append(q.parts, b)
		off, n = 0, n-take
	}
	if n != 0 {
		q.releaseHolds()
		return false
	}
	return true
}

func (q *qp) releaseHolds() {
	for i, h := range q.holds {
		release(h)
		q.holds[i] = nil
	}
	q.holds = q.holds[:0]
	for i := range q.parts {
		q.parts[i] = nil
	}
	q.parts = q.parts[:0]
}
