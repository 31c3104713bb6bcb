package loopback

import (
	"fmt"
	"sync/atomic"
	"unsafe"

	"github.com/goportals/goportals/internal/verbs"
)

// qpNums hands out queue pair numbers (24 bits, as in InfiniBand).
var qpNums atomic.Uint32

// sendWQE is a queued send work request. SGEs are copied into sg; inline payloads into
// inline, whose storage is reused by later requests in the same slot.
type sendWQE struct {
	id               uint64
	op               verbs.Opcode
	flags            verbs.SendFlags
	imm              uint32
	raddr            uint64
	rkey             uint32
	compareAdd, swap uint64
	nsg              int
	sg               [maxSGE]verbs.SGE
	inline           []byte
	seq              uint64
}

// recvWQE is a posted receive.
type recvWQE struct {
	id  uint64
	nsg int
	sg  [maxSGE]verbs.SGE
}

// qp is an RC queue pair. All fields but the retirement counters are guarded by wire.mu.
type qp struct {
	pd       *pd
	ctx      *devContext
	scq, rcq *cq
	num      uint32
	id       qpID
	maxSend  int
	maxRecv  int
	maxSGE   int

	state       verbs.QPState
	remote      *qp  // where this queue pair's requests go (set by Connect)
	connectedBy *qp  // the queue pair whose requests come here
	peerGone    bool // the partner closed or failed

	sq        fifo[sendWQE]
	sqPosted  uint64        // sequence number of the next send
	sqRetired atomic.Uint64 // sends whose slots were freed by Poll
	rq        fifo[recvWQE]
	rqPosted  uint64
	rqRetired atomic.Uint64
}

func newQP(p *pd, scq, rcq *cq, sendWR, recvWR, nsge int) *qp {
	return &qp{
		pd: p, ctx: p.ctx, scq: scq, rcq: rcq,
		num:     qpNums.Add(1) & 0xffffff,
		maxSend: sendWR, maxRecv: recvWR, maxSGE: nsge,
		state: verbs.QPInit,
	}
}

// Num returns the queue pair number.
func (q *qp) Num() uint32 { return q.num }

// Address returns the opaque address peers pass to Connect.
func (q *qp) Address() verbs.Address { return encodeAddress(q.id) }

// State returns the current state.
func (q *qp) State() verbs.QPState {
	wire.mu.Lock()
	defer wire.mu.Unlock()
	return q.state
}

// Connect connects to the queue pair at remote, which must be in this process and not
// connected to another queue pair. Requests posted before the peer connects back wait.
func (q *qp) Connect(remote verbs.Address) error {
	const op = "connect"
	id, err := decodeAddress(remote)
	if err != nil {
		return err
	}
	wire.mu.Lock()
	defer wire.mu.Unlock()
	switch {
	case q.state == verbs.QPClosed:
		return verbs.Errorf(op, verbs.ErrClosed, nil)
	case q.state != verbs.QPInit:
		return verbs.Errorf(op, verbs.ErrQPState, nil)
	}
	t := wire.qps[id]
	switch {
	case t == nil || t.state == verbs.QPClosed || t.state == verbs.QPError:
		return verbs.Errorf(op, verbs.ErrUnreachable, errUnknownQP)
	case t.connectedBy != nil && t.connectedBy != q, t.remote != nil && t.remote != q:
		return verbs.Errorf(op, verbs.ErrUnreachable, errPeerTaken)
	case q.connectedBy != nil && q.connectedBy != t:
		return verbs.Errorf(op, verbs.ErrInvalidArgument, errPeerTaken)
	}
	q.remote = t
	t.connectedBy = q
	q.state = verbs.QPReady
	q.progress()
	if t != q {
		t.progress()
	}
	return nil
}

// PostSend queues wr in order and runs what can run. On a synchronous error the
// requests before the failing one were posted.
func (q *qp) PostSend(wr []verbs.SendWR) error {
	wire.mu.Lock()
	defer wire.mu.Unlock()
	switch q.state {
	case verbs.QPClosed:
		return verbs.Errorf("post send", verbs.ErrClosed, nil)
	case verbs.QPInit:
		return verbs.Errorf("post send", verbs.ErrQPState, nil)
	}
	var err error
	for i := range wr {
		w := &wr[i]
		if kind := q.checkSend(w); kind != nil {
			err = verbs.Errorf(fmt.Sprintf("post send: work request %d (id %#x)", i, w.ID), kind, nil)
			break
		}
		e := q.sq.push()
		e.id, e.op, e.flags, e.imm = w.ID, w.Opcode, w.Flags, w.Imm
		e.raddr, e.rkey, e.compareAdd, e.swap = w.RemoteAddr, w.RKey, w.CompareAdd, w.Swap
		e.seq = q.sqPosted
		q.sqPosted++
		e.inline = e.inline[:0]
		if w.Flags&verbs.SendInline != 0 {
			e.nsg = 0
			for _, s := range w.SG {
				if s.Length > 0 {
					e.inline = append(e.inline, rawBytes(s.Addr, s.Length)...)
				}
			}
		} else {
			e.nsg = copy(e.sg[:], w.SG)
		}
	}
	if q.state == verbs.QPError {
		q.flush()
	} else {
		q.progress()
	}
	return err
}

// checkSend validates a send work request at post time and returns the sentinel
// error kind, or nil.
func (q *qp) checkSend(w *verbs.SendWR) error {
	if w.Opcode > verbs.OpAtomicCmpSwap || w.Flags&^(verbs.SendSignaled|verbs.SendFence|verbs.SendInline|verbs.SendSolicited) != 0 {
		return verbs.ErrInvalidArgument
	}
	if len(w.SG) > q.maxSGE {
		return verbs.ErrInvalidArgument
	}
	if q.sqPosted-q.sqRetired.Load() >= uint64(q.maxSend) {
		return verbs.ErrNoResources
	}
	switch w.Opcode {
	case verbs.OpAtomicFetchAdd, verbs.OpAtomicCmpSwap:
		if !limits.Atomics {
			return verbs.ErrNotSupported
		}
		if len(w.SG) != 1 || w.SG[0].Length != 8 || w.Flags&verbs.SendInline != 0 {
			return verbs.ErrInvalidArgument
		}
	case verbs.OpRDMARead:
		if w.Flags&verbs.SendInline != 0 {
			return verbs.ErrInvalidArgument
		}
	}
	if w.Flags&verbs.SendInline != 0 {
		if verbs.TotalLength(w.SG) > uint64(limits.MaxInline) {
			return verbs.ErrInvalidArgument
		}
		for _, s := range w.SG {
			if s.Length > 0 && s.Addr == 0 {
				return verbs.ErrInvalidArgument
			}
		}
	}
	return nil
}

// rawBytes views n bytes at the virtual address addr. Inline sends carry raw addresses
// with no key, as in ibverbs; the caller guarantees the memory is live during PostSend.
func rawBytes(addr uint64, n uint32) []byte {
	p := uintptr(addr)
	return unsafe.Slice((*byte)(*(*unsafe.Pointer)(unsafe.Pointer(&p))), n)
}

// PostRecv queues receive work requests. They are allowed in the init state.
func (q *qp) PostRecv(wr []verbs.RecvWR) error {
	wire.mu.Lock()
	defer wire.mu.Unlock()
	if q.state == verbs.QPClosed {
		return verbs.Errorf("post recv", verbs.ErrClosed, nil)
	}
	var err error
	for i := range wr {
		w := &wr[i]
		var kind error
		switch {
		case len(w.SG) > q.maxSGE:
			kind = verbs.ErrInvalidArgument
		case q.rqPosted-q.rqRetired.Load() >= uint64(q.maxRecv):
			kind = verbs.ErrNoResources
		}
		if kind != nil {
			err = verbs.Errorf(fmt.Sprintf("post recv: work request %d (id %#x)", i, w.ID), kind, nil)
			break
		}
		e := q.rq.push()
		e.id = w.ID
		e.nsg = copy(e.sg[:], w.SG)
		q.rqPosted++
	}
	switch {
	case q.state == verbs.QPError:
		q.flush()
	case q.peerGone && q.state == verbs.QPReady:
		q.enterError()
	case q.connectedBy != nil:
		q.connectedBy.progress()
	}
	return err
}

// Close destroys the queue pair: queued work completes flushed, the peer learns that
// its partner is gone.
func (q *qp) Close() error {
	wire.mu.Lock()
	defer wire.mu.Unlock()
	if q.state == verbs.QPClosed {
		return verbs.Errorf("close qp", verbs.ErrClosed, nil)
	}
	q.destroy()
	return nil
}

// destroy implements Close. Called with wire.mu held.
func (q *qp) destroy() {
	q.flush()
	q.state = verbs.QPClosed
	delete(wire.qps, q.id)
	q.scq.detach(q)
	if q.rcq != q.scq {
		q.rcq.detach(q)
	}
	delete(q.ctx.qps, q)
	q.pd.nqp--
	q.tellPeers()
}

// tellPeers tells the queue pairs connected with q that q failed or left.
func (q *qp) tellPeers() {
	if r := q.remote; r != nil && r != q {
		r.peerLost(q)
	}
	if c := q.connectedBy; c != nil && c != q && c != q.remote {
		c.peerLost(q)
	}
}

// enterError moves q to the error state and flushes its queues. Called with wire.mu held.
func (q *qp) enterError() {
	if q.state != verbs.QPInit && q.state != verbs.QPReady {
		return
	}
	q.state = verbs.QPError
	q.flush()
}

// fail moves q to the error state because of a local fault and tells its peers.
func (q *qp) fail() {
	if q.state != verbs.QPInit && q.state != verbs.QPReady {
		return
	}
	q.enterError()
	q.tellPeers()
}

// flush completes every queued request with StatusWorkRequestFlushed.
func (q *qp) flush() {
	for q.sq.len() > 0 {
		q.completeSend(q.sq.front(), verbs.StatusWorkRequestFlushed, 0)
		q.sq.pop()
	}
	for q.rq.len() > 0 {
		q.completeRecv(q.rq.front(), verbs.StatusWorkRequestFlushed, verbs.WCRecv, 0, 0, 0)
		q.rq.pop()
	}
}

// peerLost records that gone, a partner of q, closed or failed. A connected q with work
// outstanding fails at once (its next send with StatusRetryExceeded); an idle one fails
// at its next post. Called with wire.mu held.
func (q *qp) peerLost(gone *qp) {
	switch q.state {
	case verbs.QPInit:
		if q.connectedBy == gone {
			q.connectedBy = nil // never connected back: free to connect elsewhere
		}
		return
	case verbs.QPReady:
	default:
		return
	}
	q.peerGone = true
	if q.sq.len() == 0 && q.rq.len() == 0 {
		return
	}
	if q.sq.len() > 0 {
		q.completeSend(q.sq.front(), verbs.StatusRetryExceeded, 0)
		q.sq.pop()
	}
	q.enterError()
}

// completeSend queues the completion of a send request on the send CQ.
func (q *qp) completeSend(w *sendWQE, st verbs.Status, n uint32) {
	q.scq.push(cqEntry{
		wc: verbs.WorkCompletion{ID: w.id, Status: st, Opcode: verbs.OpcodeOf(w.op),
			ByteLen: n, QPNum: q.num},
		qp: q, seq: w.seq, send: true,
	})
}

// completeRecv queues the completion of a receive request on the receive CQ.
func (q *qp) completeRecv(r *recvWQE, st verbs.Status, op verbs.WCOpcode, fl verbs.WCFlags, n, imm uint32) {
	q.rcq.push(cqEntry{
		wc: verbs.WorkCompletion{ID: r.id, Status: st, Opcode: op, Flags: fl, ByteLen: n,
			Imm: imm, QPNum: q.num},
		qp: q,
	})
}
