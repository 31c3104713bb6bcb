//go:build linux && cgo && !noibverbs

package ibv

/*
#include "shim.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/goportals/goportals/internal/verbs"
)

// Work request IDs handed to the hardware are sequence numbers; the caller's IDs
// live in per-queue side tables indexed by them (so completions carry the right
// opcode and length even for errors, where ibv_wc leaves them undefined, and the
// queue depths the caller asked for are enforced exactly).
const (
	recvBit   = 1 << 62 // a receive's sequence number
	markerBit = 1 << 63 // the close drain's marker requests
)

// Queue pair defaults when QPAttr leaves them 0.
const (
	defaultWR  = 256
	defaultSGE = 16
)

// drainTimeout bounds how long Close waits for the flushed completions.
const drainTimeout = 5 * time.Second

// qp is a reliable-connected queue pair.
type qp struct {
	pd       *pd
	qp       *C.struct_ibv_qp
	num      uint32
	psn      uint32
	scq, rcq *cq
	maxSGE   int
	inline   int

	mu    sync.Mutex
	state verbs.QPState

	// Side tables, written by the posting side before sendPosted/recvPosted is
	// stored, read by the polling side after it loaded them.
	sendIDs  []uint64
	sendOps  []verbs.Opcode
	sendLens []uint32
	recvIDs  []uint64

	sendPosted, sendDone atomic.Uint64
	recvPosted, recvDone atomic.Uint64
	markSend, markRecv   atomic.Bool

	// Scratch for flattening a batch (pointer-free, passed to C).
	swr []C.ptl_send
	rwr []C.ptl_recv
	sge []C.struct_ibv_sge
}

// CreateQP creates a reliable-connected queue pair and moves it to INIT.
func (d *pd) CreateQP(attr verbs.QPAttr) (verbs.QP, error) {
	c := d.ctx
	scq, ok1 := attr.SendCQ.(*cq)
	rcq, ok2 := attr.RecvCQ.(*cq)
	if !ok1 || !ok2 || scq == nil || rcq == nil {
		return nil, verbs.Errorf("ibv: create qp", verbs.ErrInvalidArgument, errors.New("completion queues missing or not ibv's"))
	}
	if scq.ctx != c || rcq.ctx != c {
		return nil, verbs.Errorf("ibv: create qp", verbs.ErrInvalidArgument, errors.New("completion queue of another context"))
	}
	ns, nr, sge := attr.MaxSendWR, attr.MaxRecvWR, attr.MaxSGE
	if ns == 0 {
		ns = min(defaultWR, c.attr.MaxQPWR)
	}
	if nr == 0 {
		nr = min(defaultWR, c.attr.MaxQPWR)
	}
	if sge == 0 {
		sge = min(defaultSGE, c.attr.MaxSGE)
	}
	if ns < 1 || nr < 1 || sge < 0 || ns > c.attr.MaxQPWR || nr > c.attr.MaxQPWR || sge > c.attr.MaxSGE {
		return nil, verbs.Errorf("ibv: create qp", verbs.ErrInvalidArgument,
			fmt.Errorf("send %d, recv %d, sge %d above the device's %d, %d", ns, nr, sge, c.attr.MaxQPWR, c.attr.MaxSGE))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || d.closed {
		return nil, verbs.Errorf("ibv: create qp", verbs.ErrClosed, nil)
	}
	var capa C.struct_ibv_qp_cap
	var e C.int
	// One slot more on each queue for the close drain's marker.
	h := C.ptl_create_qp(d.pd, scq.cq, rcq.cq, C.uint32_t(ns+1), C.uint32_t(nr+1), C.uint32_t(sge),
		C.uint32_t(c.attr.MaxInline), &capa, &e)
	if h == nil {
		return nil, errnoErr("create qp", e)
	}
	if rc := C.ptl_qp_to_init(h, C.uint8_t(c.port)); rc != 0 {
		C.ibv_destroy_qp(h)
		return nil, errnoErr("modify qp to INIT", rc)
	}
	q := &qp{pd: d, qp: h, num: uint32(h.qp_num), psn: newPSN(), scq: scq, rcq: rcq,
		maxSGE: sge, inline: int(capa.max_inline_data), state: verbs.QPInit,
		sendIDs: make([]uint64, ns), sendOps: make([]verbs.Opcode, ns), sendLens: make([]uint32, ns),
		recvIDs: make([]uint64, nr)}
	for _, x := range q.cqs() {
		x.mu.Lock()
		x.qps[q.num] = q
		x.users++
		x.mu.Unlock()
	}
	d.qps[q] = struct{}{}
	return q, nil
}

// cqs returns the queue pair's completion queues, each once.
func (q *qp) cqs() []*cq {
	if q.scq == q.rcq {
		return []*cq{q.scq}
	}
	return []*cq{q.scq, q.rcq}
}

// Num is the queue pair number.
func (q *qp) Num() uint32 { return q.num }

// Address encodes what the peer needs to connect: port, MTU, LID, GID, QPN, PSN.
func (q *qp) Address() verbs.Address {
	c := q.pd.ctx
	return address{Port: c.port, MTU: c.mtu, Global: c.ethernet, LID: c.lid, QPN: q.num, PSN: q.psn, GID: c.gid}.encode()
}

// Connect moves the queue pair through RTR to RTS towards remote.
func (q *qp) Connect(remote verbs.Address) error {
	a, err := decodeAddress(remote)
	if err != nil {
		return err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	switch q.state {
	case verbs.QPClosed:
		return verbs.Errorf("ibv: connect", verbs.ErrClosed, nil)
	case verbs.QPInit:
	default:
		return verbs.Errorf("ibv: connect", verbs.ErrQPState, fmt.Errorf("queue pair is %v", q.state))
	}
	c := q.pd.ctx
	global := c.ethernet || a.Global
	mtu := min(c.mtu, a.MTU)
	if rc := C.ptl_qp_to_rtr(q.qp, C.uint8_t(c.port), C.enum_ibv_mtu(mtu), C.uint32_t(a.QPN), C.uint32_t(a.PSN),
		C.uint16_t(a.LID), boolInt(global), (*C.uint8_t)(unsafe.Pointer(&a.GID[0])), C.uint8_t(c.gidIndex), C.uint8_t(c.destAtom)); rc != 0 {
		return errnoErr("modify qp to RTR", rc)
	}
	if rc := C.ptl_qp_to_rts(q.qp, C.uint32_t(q.psn), C.uint8_t(c.rdAtom)); rc != 0 {
		q.state = verbs.QPError
		return errnoErr("modify qp to RTS", rc)
	}
	q.state = verbs.QPReady
	return nil
}

func boolInt(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

// wrOpcode maps a verbs opcode onto ibv_wr_opcode.
func wrOpcode(o verbs.Opcode) (C.uint32_t, bool) {
	switch o {
	case verbs.OpSend:
		return C.IBV_WR_SEND, true
	case verbs.OpSendWithImm:
		return C.IBV_WR_SEND_WITH_IMM, true
	case verbs.OpRDMAWrite:
		return C.IBV_WR_RDMA_WRITE, true
	case verbs.OpRDMAWriteWithImm:
		return C.IBV_WR_RDMA_WRITE_WITH_IMM, true
	case verbs.OpRDMARead:
		return C.IBV_WR_RDMA_READ, true
	case verbs.OpAtomicFetchAdd:
		return C.IBV_WR_ATOMIC_FETCH_AND_ADD, true
	case verbs.OpAtomicCmpSwap:
		return C.IBV_WR_ATOMIC_CMP_AND_SWP, true
	}
	return 0, false
}

// sendFlags maps verbs send flags onto ibv_send_flags.
func sendFlags(f verbs.SendFlags) C.uint32_t {
	var o C.uint32_t
	if f&verbs.SendSignaled != 0 {
		o |= C.IBV_SEND_SIGNALED
	}
	if f&verbs.SendFence != 0 {
		o |= C.IBV_SEND_FENCE
	}
	if f&verbs.SendInline != 0 {
		o |= C.IBV_SEND_INLINE
	}
	if f&verbs.SendSolicited != 0 {
		o |= C.IBV_SEND_SOLICITED
	}
	return o
}

// checkSend validates one send work request against the queue pair and device.
func (q *qp) checkSend(wr *verbs.SendWR) error {
	if _, ok := wrOpcode(wr.Opcode); !ok {
		return fmt.Errorf("unknown opcode %d", wr.Opcode)
	}
	if len(wr.SG) > q.maxSGE {
		return fmt.Errorf("%d SGEs, the queue pair takes %d", len(wr.SG), q.maxSGE)
	}
	n := verbs.TotalLength(wr.SG)
	if n > q.pd.ctx.attr.MaxMsgSize {
		return fmt.Errorf("%d bytes, the port's maximum message is %d", n, q.pd.ctx.attr.MaxMsgSize)
	}
	if wr.Flags&verbs.SendInline != 0 && n > uint64(q.inline) {
		return fmt.Errorf("%d inline bytes, the queue pair takes %d", n, q.inline)
	}
	if wr.Opcode == verbs.OpAtomicFetchAdd || wr.Opcode == verbs.OpAtomicCmpSwap {
		if len(wr.SG) != 1 || wr.SG[0].Length != 8 {
			return errors.New("an atomic takes exactly one 8-byte SGE")
		}
	}
	return nil
}

// PostSend posts wr as one chain (one cgo call). Requests before a failing one are
// posted; the error says which failed.
func (q *qp) PostSend(wr []verbs.SendWR) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	switch q.state {
	case verbs.QPClosed:
		return verbs.Errorf("ibv: post send", verbs.ErrClosed, nil)
	case verbs.QPInit:
		return verbs.Errorf("ibv: post send", verbs.ErrQPState, errors.New("queue pair not connected"))
	}
	atomics := q.pd.ctx.attr.Atomics
	posted := q.sendPosted.Load()
	free := uint64(len(q.sendIDs)) - (posted - q.sendDone.Load())
	n := 0
	var fail error
	for i := range wr {
		w := &wr[i]
		if err := q.checkSend(w); err != nil {
			fail = verbs.Errorf(fmt.Sprintf("ibv: post send: request %d", i), verbs.ErrInvalidArgument, err)
			break
		}
		if !atomics && (w.Opcode == verbs.OpAtomicFetchAdd || w.Opcode == verbs.OpAtomicCmpSwap) {
			fail = verbs.Errorf(fmt.Sprintf("ibv: post send: request %d", i), verbs.ErrNotSupported, errors.New("the device has no atomics"))
			break
		}
		if uint64(i) >= free {
			fail = verbs.Errorf(fmt.Sprintf("ibv: post send: request %d", i), verbs.ErrNoResources,
				fmt.Errorf("send queue of %d is full", len(q.sendIDs)))
			break
		}
		n++
	}
	if n > 0 {
		if err := q.postSend(wr[:n], posted); err != nil {
			return err
		}
	}
	return fail
}

// flattenSend fills the side tables and the pointer-free scratch arrays for wr,
// whose first request gets sequence number seq; q.mu is held.
func (q *qp) flattenSend(wr []verbs.SendWR, seq uint64) {
	q.swr = q.swr[:0]
	q.sge = q.sge[:0]
	for i := range wr {
		w := &wr[i]
		op, _ := wrOpcode(w.Opcode)
		s := seq + uint64(i)
		slot := s % uint64(len(q.sendIDs))
		q.sendIDs[slot], q.sendOps[slot], q.sendLens[slot] = w.ID, w.Opcode, uint32(verbs.TotalLength(w.SG))
		q.swr = append(q.swr, C.ptl_send{wr_id: C.uint64_t(s), remote_addr: C.uint64_t(w.RemoteAddr),
			compare_add: C.uint64_t(w.CompareAdd), swap: C.uint64_t(w.Swap), rkey: C.uint32_t(w.RKey),
			imm: C.uint32_t(w.Imm), sge_off: C.uint32_t(len(q.sge)), num_sge: C.uint32_t(len(w.SG)),
			opcode: op, flags: sendFlags(w.Flags)})
		for _, g := range w.SG {
			q.sge = append(q.sge, C.struct_ibv_sge{addr: C.uint64_t(g.Addr), length: C.uint32_t(g.Length), lkey: C.uint32_t(g.LKey)})
		}
	}
}

// sgePtr returns the scratch SGE array for C, nil when empty.
func (q *qp) sgePtr() *C.struct_ibv_sge {
	if len(q.sge) == 0 {
		return nil
	}
	return &q.sge[0]
}

// postSend flattens wr and posts it with one cgo call; q.mu is held.
func (q *qp) postSend(wr []verbs.SendWR, seq uint64) error {
	q.flattenSend(wr, seq)
	q.sendPosted.Store(seq + uint64(len(wr))) // publish the side tables before the hardware can complete
	var bad C.int
	rc := C.ptl_post_send(q.qp, &q.swr[0], C.int(len(q.swr)), q.sgePtr(), &bad)
	if rc != 0 {
		q.sendPosted.Store(seq + uint64(bad))
		return errnoErr(fmt.Sprintf("post send: request %d", int(bad)), rc)
	}
	return nil
}

// PostRecv posts receive work requests as one chain.
func (q *qp) PostRecv(wr []verbs.RecvWR) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.state == verbs.QPClosed {
		return verbs.Errorf("ibv: post recv", verbs.ErrClosed, nil)
	}
	posted := q.recvPosted.Load()
	free := uint64(len(q.recvIDs)) - (posted - q.recvDone.Load())
	n := 0
	var fail error
	for i := range wr {
		if len(wr[i].SG) > q.maxSGE {
			fail = verbs.Errorf(fmt.Sprintf("ibv: post recv: request %d", i), verbs.ErrInvalidArgument,
				fmt.Errorf("%d SGEs, the queue pair takes %d", len(wr[i].SG), q.maxSGE))
			break
		}
		if uint64(i) >= free {
			fail = verbs.Errorf(fmt.Sprintf("ibv: post recv: request %d", i), verbs.ErrNoResources,
				fmt.Errorf("receive queue of %d is full", len(q.recvIDs)))
			break
		}
		n++
	}
	if n == 0 {
		return fail
	}
	q.rwr = q.rwr[:0]
	q.sge = q.sge[:0]
	for i := range wr[:n] {
		s := posted + uint64(i)
		q.recvIDs[s%uint64(len(q.recvIDs))] = wr[i].ID
		q.rwr = append(q.rwr, C.ptl_recv{wr_id: C.uint64_t(s | recvBit), sge_off: C.uint32_t(len(q.sge)), num_sge: C.uint32_t(len(wr[i].SG))})
		for _, g := range wr[i].SG {
			q.sge = append(q.sge, C.struct_ibv_sge{addr: C.uint64_t(g.Addr), length: C.uint32_t(g.Length), lkey: C.uint32_t(g.LKey)})
		}
	}
	q.recvPosted.Store(posted + uint64(n))
	var bad C.int
	if rc := C.ptl_post_recv(q.qp, &q.rwr[0], C.int(n), q.sgePtr(), &bad); rc != 0 {
		q.recvPosted.Store(posted + uint64(bad))
		return errnoErr(fmt.Sprintf("post recv: request %d", int(bad)), rc)
	}
	return fail
}

// State returns the current state.
func (q *qp) State() verbs.QPState {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.state
}

// failed records that the hardware moved the queue pair to the error state (an
// error completion); later work completes flushed. Called with the CQ lock held.
func (q *qp) failed() {
	q.mu.Lock()
	if q.state == verbs.QPReady {
		q.state = verbs.QPError
	}
	q.mu.Unlock()
}

// markerSeen records that the close drain's marker on one queue came back.
func (q *qp) markerSeen(recv bool) {
	if recv {
		q.markRecv.Store(true)
	} else {
		q.markSend.Store(true)
	}
}

// Close moves the queue pair to the error state, so every outstanding request
// completes flushed, collects those completions into the queues' pending lists
// (destroying a queue pair removes its entries from the hardware queues), and
// destroys it.
func (q *qp) Close() error {
	c := q.pd.ctx
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return verbs.Errorf("ibv: close qp", verbs.ErrClosed, nil)
	}
	q.mu.Lock()
	if q.state == verbs.QPClosed {
		q.mu.Unlock()
		return verbs.Errorf("ibv: close qp", verbs.ErrClosed, nil)
	}
	q.mu.Unlock()
	return q.destroyLocked(true)
}

// destroyLocked destroys the queue pair, first draining its flushed completions when
// drain is set; the context lock is held.
func (q *qp) destroyLocked(drain bool) error {
	q.mu.Lock()
	q.state = verbs.QPClosed
	if drain && C.ptl_qp_to_err(q.qp) == 0 {
		// Markers behind everything outstanding: when both come back flushed, every
		// earlier request has completed.
		var bad C.int
		s := C.ptl_send{wr_id: markerBit, opcode: C.IBV_WR_SEND, flags: C.IBV_SEND_SIGNALED}
		if C.ptl_post_send(q.qp, &s, 1, nil, &bad) != 0 {
			q.markSend.Store(true)
		}
		r := C.ptl_recv{wr_id: markerBit | recvBit}
		if C.ptl_post_recv(q.qp, &r, 1, nil, &bad) != 0 {
			q.markRecv.Store(true)
		}
	} else {
		q.markSend.Store(true)
		q.markRecv.Store(true)
	}
	q.mu.Unlock()
	deadline := time.Now().Add(drainTimeout)
	for !(q.markSend.Load() && q.markRecv.Load()) && time.Now().Before(deadline) {
		for _, x := range q.cqs() {
			x.mu.Lock()
			if !x.closed {
				x.fill()
			}
			x.mu.Unlock()
		}
		time.Sleep(50 * time.Microsecond)
	}
	rc := C.ibv_destroy_qp(q.qp)
	for _, x := range q.cqs() {
		x.mu.Lock()
		if x.qps[q.num] == q {
			delete(x.qps, q.num)
			x.users--
		}
		x.mu.Unlock()
	}
	delete(q.pd.qps, q)
	if rc != 0 {
		return errnoErr("destroy qp", rc)
	}
	return nil
}
