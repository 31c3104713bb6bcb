package soft

import (
	"encoding/binary"
	"sync/atomic"
	"unsafe"

	"github.com/goportals/goportals/internal/verbs"
)

// drain handles the messages the peer published, in order. A SEND or a WRITE with
// immediate that finds no posted receive stays in the ring until one is posted
// (receiver-not-ready retry, forever, like rnr_retry = 7). Called with q.mu held.
func (q *qp) drain() int {
	n := 0
	var m msg
	q.stalled = false
	msgs := q.msgOn.Load()
	for q.State() == verbs.QPReady && q.in.peek(&m) {
		if msgs && q.isMessage(&m) {
			// PollMessages hands it out (messages.go): everything before it is
			// applied, and the receive queue's waiters learn it is there.
			q.rcq.noteMessage()
			if !q.msgWait.Load() {
				q.msgWait.Store(true)
			}
			break
		}
		if !q.handle(&m) {
			q.stalled = true
			break
		}
		q.in.consume(m.len)
		n++
		if q.refused {
			// The NAK and the tail past the refused message are visible to the peer
			// before it sees our queue pair fail.
			q.refused = false
			q.fail(verbs.StatusWorkRequestFlushed)
		}
	}
	if n > 0 {
		if w := q.in.wantWord(); atomic.LoadUint32(w) != 0 {
			atomic.StoreUint32(w, 0)
			wakePeer(q.peer)
		}
	}
	return n
}

// refuse NAKs the peer's message; drain then consumes it and fails the queue pair:
// after an error neither side of a reliable connection goes on.
func (q *qp) refuse(m *msg, st verbs.Status) bool {
	q.in.nak(m.token, uint8(st))
	q.refused = true
	return true
}

// handle processes one message; it returns false to leave it in the ring for later.
func (q *qp) handle(m *msg) bool {
	switch m.op {
	case opSend:
		if m.flags&flHdr != 0 {
			return q.handleHdrSend(m)
		}
		if !q.recvOn {
			if q.rqHead == q.rqTail {
				return false
			}
			if m.a != 0 {
				return q.refuse(m, verbs.StatusRemoteInvalidRequest)
			}
			q.recvOn, q.recvOff = true, 0
		}
		r := &q.rq[q.rqHead%uint64(len(q.rq))]
		if m.a != q.recvOff || m.b < m.a+uint64(m.len) {
			return q.refuse(m, verbs.StatusRemoteInvalidRequest)
		}
		if m.b > r.total {
			q.completeRecv(r, verbs.StatusLocalLengthError, verbs.WCRecv, 0, m)
			return q.refuse(m, verbs.StatusRemoteInvalidRequest)
		}
		if m.len > 0 {
			if !q.sgParts(r.sg, m.a, uint64(m.len), verbs.AccessLocalWrite, true) {
				q.completeRecv(r, verbs.StatusLocalProtectionError, verbs.WCRecv, 0, m)
				return q.refuse(m, verbs.StatusRemoteOperationError)
			}
			q.scatter()
		}
		q.recvOff += uint64(m.len)
		if m.flags&flLast != 0 {
			q.completeRecv(r, verbs.StatusSuccess, verbs.WCRecv, uint32(m.b), m)
		}
		return true

	case opWrite:
		if m.flags&flImm != 0 && q.rqHead == q.rqTail {
			return false
		}
		if m.len > 0 { // a zero-length RDMA checks no key, as on InfiniBand
			dst, hold, ok := q.ctx.local(m.rkey, m.raddr, uint64(m.len), verbs.AccessRemoteWrite, q.pd.id)
			if !ok {
				return q.refuse(m, verbs.StatusRemoteAccessError)
			}
			q.in.payload(dst, 0)
			release(hold)
		}
		if m.flags&flImm != 0 {
			q.completeRecv(&q.rq[q.rqHead%uint64(len(q.rq))], verbs.StatusSuccess, verbs.WCRecvRDMAWithImm, m.len, m)
		}
		return true

	case opImm:
		if q.rqHead == q.rqTail {
			return false
		}
		m.flags |= flImm
		q.completeRecv(&q.rq[q.rqHead%uint64(len(q.rq))], verbs.StatusSuccess, verbs.WCRecvRDMAWithImm, uint32(m.b), m)
		return true

	case opAtomicReq:
		if m.raddr%8 != 0 || m.flags > atomCSwap {
			return q.refuse(m, verbs.StatusRemoteInvalidRequest)
		}
		b, hold, ok := q.ctx.local(m.rkey, m.raddr, 8, verbs.AccessRemoteAtomic, q.pd.id)
		if !ok {
			return q.refuse(m, verbs.StatusRemoteAccessError)
		}
		word := (*uint64)(unsafe.Pointer(&b[0]))
		var old uint64
		if m.flags == atomFAdd {
			old = atomic.AddUint64(word, m.a) - m.a
		} else {
			for {
				old = atomic.LoadUint64(word)
				if old != m.a || atomic.CompareAndSwapUint64(word, old, m.b) {
					break
				}
			}
		}
		release(hold)
		q.respond(msg{op: opAtomicResp, token: m.token, a: old}, nil)
		return true

	case opAtomicResp:
		e := q.byToken(m.token)
		if e == nil || e.state != esAwaitResp || e.wr.Opcode < verbs.OpAtomicFetchAdd {
			q.fail(verbs.StatusRemoteOperationError)
			return true
		}
		q.waiting--
		if !q.sgParts(e.sg, 0, 8, verbs.AccessLocalWrite, true) {
			q.failEntry(e, verbs.StatusLocalProtectionError)
			return true
		}
		var v [8]byte
		binary.LittleEndian.PutUint64(v[:], m.a)
		copyParts(q.parts, v[:])
		q.releaseHolds()
		e.byteLen = 8
		e.state = esDone
		return true

	default:
		return q.refuse(m, verbs.StatusRemoteInvalidRequest)
	}
}

// handleHdrSend receives a single-fragment SEND: hStatus bytes from the header
// slot, then m.len bytes from the payload slots.
func (q *qp) handleHdrSend(m *msg) bool {
	inl := uint64(m.status)
	total := inl + uint64(m.len)
	if q.recvOn || inl > hdrInline || (m.len > 0 && inl != hdrInline) {
		return q.refuse(m, verbs.StatusRemoteInvalidRequest)
	}
	if q.rqHead == q.rqTail {
		return false
	}
	r := &q.rq[q.rqHead%uint64(len(q.rq))]
	if total > r.total {
		q.completeRecv(r, verbs.StatusLocalLengthError, verbs.WCRecv, 0, m)
		return q.refuse(m, verbs.StatusRemoteInvalidRequest)
	}
	if total > 0 {
		if !q.sgParts(r.sg, 0, total, verbs.AccessLocalWrite, true) {
			q.completeRecv(r, verbs.StatusLocalProtectionError, verbs.WCRecv, 0, m)
			return q.refuse(m, verbs.StatusRemoteOperationError)
		}
		var d [hdrInline]byte
		q.in.inlineBytes(d[:inl])
		// the inline prefix, then the payload slots, across the receive's pieces
		src, off := d[:inl], 0
		for _, p := range q.parts {
			c := copy(p, src)
			src = src[c:]
			if c < len(p) {
				q.in.payload(p[c:], off)
				off += len(p) - c
			}
		}
		q.releaseHolds()
	}
	q.completeRecv(r, verbs.StatusSuccess, verbs.WCRecv, uint32(total), m)
	return true
}

// scatter copies the peeked message's payload into q.parts and releases them.
func (q *qp) scatter() {
	off := 0
	for _, p := range q.parts {
		q.in.payload(p, off)
		off += len(p)
	}
	q.releaseHolds()
}

func copyParts(parts [][]byte, src []byte) {
	for _, p := range parts {
		src = src[copy(p, src):]
	}
}

// completeRecv completes the receive at the head of the queue.
func (q *qp) completeRecv(r *recvEntry, st verbs.Status, op verbs.WCOpcode, n uint32, m *msg) {
	wc := verbs.WorkCompletion{ID: r.id, Status: st, Opcode: op, ByteLen: n, QPNum: q.num}
	if st == verbs.StatusSuccess && m.flags&flImm != 0 {
		wc.Flags, wc.Imm = verbs.WCWithImm, m.imm
	}
	q.rqHead++
	q.recvOn = false
	q.rcq.push(wc)
}

// byToken finds the outstanding send entry a response refers to.
func (q *qp) byToken(tok uint64) *sendEntry {
	if tok == 0 || tok-1 < q.sqHead || tok-1 >= q.sqIss {
		return nil
	}
	e := &q.sq[(tok-1)%uint64(len(q.sq))]
	if e.token != tok {
		return nil
	}
	return e
}

// respond sends a response now, or queues it (with a private copy of the data)
// when the ring is full: the inbound ring must keep moving, or two peers that send
// atomics to each other could wait on each other's full rings forever. (A response
// still waits behind a SEND of the peer's that finds no receive posted here: post
// receives before expecting atomic results from a peer that sends.)
func (q *qp) respond(m msg, data []byte) {
	if len(q.pend) == 0 && q.out.space(len(data)) {
		q.parts = append(q.parts[:0], data)
		q.out.push(&m, q.parts, len(data))
		q.parts[0] = nil
		q.parts = q.parts[:0]
		wakePeer(q.peer)
		return
	}
	q.pend = append(q.pend, pending{m: m, data: append([]byte(nil), data...)})
	atomic.StoreUint32(q.out.wantWord(), 1)
}

// flushPending sends queued responses that now fit.
func (q *qp) flushPending() int {
	n := 0
	for n < len(q.pend) && q.out.space(len(q.pend[n].data)) {
		p := &q.pend[n]
		q.parts = append(q.parts[:0], p.data)
		q.out.push(&p.m, q.parts, len(p.data))
		q.parts[0] = nil
		q.parts = q.parts[:0]
		p.data = nil
		n++
	}
	if n > 0 {
		rest := copy(q.pend, q.pend[n:])
		q.pend = q.pend[:rest]
		wakePeer(q.peer)
	}
	return n
}
