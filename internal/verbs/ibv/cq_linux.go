//go:build linux && cgo && !noibverbs

package ibv

/*
#include "shim.h"
*/
import "C"

import (
	"context"
	"errors"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/goportals/goportals/internal/verbs"
)

// pollBatch is how many completions one cgo call moves at most.
const pollBatch = 64

// cq is a completion queue with its own completion channel. Completions taken from
// the hardware queue but not yet returned (by Wait, or by a queue pair's close drain)
// wait in pending, ahead of the hardware queue.
type cq struct {
	ctx    *Context
	mu     sync.Mutex
	cq     *C.struct_ibv_cq
	ch     *C.struct_ibv_comp_channel
	file   *os.File // a dup of the channel fd, watched by the runtime poller
	buf    []C.ptl_wc
	closed bool

	pending []verbs.WorkCompletion
	head    int
	qps     map[uint32]*qp // by queue pair number, for the ID side tables
	users   int
}

// CreateCQ creates a completion queue with room for at least entries completions.
func (c *Context) CreateCQ(entries int) (verbs.CQ, error) {
	if entries <= 0 || entries > c.attr.MaxCQE {
		return nil, verbs.Errorf("ibv: create cq", verbs.ErrInvalidArgument, nil)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, verbs.Errorf("ibv: create cq", verbs.ErrClosed, nil)
	}
	var e C.int
	ch := C.ptl_create_channel(c.ctx, &e)
	if ch == nil {
		return nil, errnoErr("create completion channel", e)
	}
	q := C.ibv_create_cq(c.ctx, C.int(entries), nil, ch, 0)
	if q == nil {
		C.ibv_destroy_comp_channel(ch)
		return nil, verbs.Errorf("ibv: create cq", verbs.ErrNoResources, nil)
	}
	fd, err := syscall.Dup(int(ch.fd))
	if err != nil {
		C.ibv_destroy_cq(q)
		C.ibv_destroy_comp_channel(ch)
		return nil, verbs.Errorf("ibv: create cq", verbs.ErrNoResources, err)
	}
	syscall.CloseOnExec(fd)
	x := &cq{ctx: c, cq: q, ch: ch, file: os.NewFile(uintptr(fd), "ibv-comp-channel"),
		buf: make([]C.ptl_wc, pollBatch), pending: make([]verbs.WorkCompletion, 0, pollBatch),
		qps: map[uint32]*qp{}}
	c.cqs[x] = struct{}{}
	return x, nil
}

// Poll moves up to len(wc) completions into wc. It allocates nothing.
func (q *cq) Poll(wc []verbs.WorkCompletion) (int, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return 0, verbs.Errorf("ibv: poll", verbs.ErrClosed, nil)
	}
	k := 0
	for k < len(wc) && q.head < len(q.pending) {
		wc[k] = q.pending[q.head]
		q.head++
		k++
	}
	if q.head == len(q.pending) {
		q.pending, q.head = q.pending[:0], 0
	}
	if k == len(wc) {
		return k, nil
	}
	n := C.ptl_poll(q.cq, C.int(min(len(wc)-k, len(q.buf))), &q.buf[0])
	if n < 0 {
		return k, verbs.Errorf("ibv: poll", verbs.ErrNoResources, syscall.Errno(-n))
	}
	for i := range int(n) {
		if q.convert(&q.buf[i], &wc[k]) {
			k++
		}
	}
	return k, nil
}

// fill moves what the hardware queue holds into pending; q.mu is held.
func (q *cq) fill() error {
	for {
		n := C.ptl_poll(q.cq, C.int(len(q.buf)), &q.buf[0])
		if n < 0 {
			return verbs.Errorf("ibv: poll", verbs.ErrNoResources, syscall.Errno(-n))
		}
		for i := range int(n) {
			var w verbs.WorkCompletion
			if q.convert(&q.buf[i], &w) {
				q.pending = append(q.pending, w)
			}
		}
		if int(n) < len(q.buf) {
			return nil
		}
	}
}

// convert turns a completion into its verbs form, restoring the caller's ID from the
// queue pair's side table. It reports false for completions that are not the caller's
// (a close drain's markers, a destroyed queue pair's leftovers).
func (q *cq) convert(c *C.ptl_wc, out *verbs.WorkCompletion) bool {
	id := uint64(c.wr_id)
	p := q.qps[uint32(c.qp_num)]
	if p == nil {
		return false
	}
	if id&markerBit != 0 {
		p.markerSeen(id&recvBit != 0)
		return false
	}
	st := status(c.status)
	if st != verbs.StatusSuccess {
		p.failed()
	}
	*out = verbs.WorkCompletion{Status: st, QPNum: uint32(c.qp_num)}
	if id&recvBit != 0 {
		seq := id &^ recvBit
		p.recvPosted.Load() // pairs with the store in PostRecv: the side table is written
		slot := seq % uint64(len(p.recvIDs))
		out.ID = p.recvIDs[slot]
		out.Opcode = verbs.WCRecv
		if st == verbs.StatusSuccess && c.opcode == C.IBV_WC_RECV_RDMA_WITH_IMM {
			out.Opcode = verbs.WCRecvRDMAWithImm
		}
		out.ByteLen = uint32(c.byte_len)
		p.recvDone.Store(seq + 1)
	} else {
		p.sendPosted.Load()
		slot := id % uint64(len(p.sendIDs))
		out.ID = p.sendIDs[slot]
		out.Opcode = verbs.OpcodeOf(p.sendOps[slot])
		if st == verbs.StatusSuccess {
			out.ByteLen = p.sendLens[slot]
		}
		p.sendDone.Store(id + 1)
	}
	if c.flags&C.IBV_WC_WITH_IMM != 0 {
		out.Flags |= verbs.WCWithImm
		out.Imm = uint32(c.imm)
	}
	return true
}

// status maps ibv_wc_status onto verbs.Status.
func status(s C.uint32_t) verbs.Status {
	switch s {
	case C.IBV_WC_SUCCESS:
		return verbs.StatusSuccess
	case C.IBV_WC_LOC_LEN_ERR:
		return verbs.StatusLocalLengthError
	case C.IBV_WC_LOC_QP_OP_ERR:
		return verbs.StatusLocalQPOperationError
	case C.IBV_WC_LOC_PROT_ERR:
		return verbs.StatusLocalProtectionError
	case C.IBV_WC_WR_FLUSH_ERR:
		return verbs.StatusWorkRequestFlushed
	case C.IBV_WC_REM_INV_REQ_ERR:
		return verbs.StatusRemoteInvalidRequest
	case C.IBV_WC_REM_ACCESS_ERR:
		return verbs.StatusRemoteAccessError
	case C.IBV_WC_REM_OP_ERR:
		return verbs.StatusRemoteOperationError
	case C.IBV_WC_RETRY_EXC_ERR:
		return verbs.StatusRetryExceeded
	case C.IBV_WC_RNR_RETRY_EXC_ERR:
		return verbs.StatusRNRRetryExceeded
	}
	return verbs.StatusGeneralError
}

// Wait blocks until a completion is ready to Poll: it arms the queue, polls once to
// close the race with a completion that arrived before arming, and sleeps on the
// completion channel.
func (q *cq) Wait(ctx context.Context) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		q.mu.Lock()
		if q.closed {
			q.mu.Unlock()
			return verbs.Errorf("ibv: wait", verbs.ErrClosed, nil)
		}
		if q.head < len(q.pending) {
			q.mu.Unlock()
			return nil
		}
		if rc := C.ptl_req_notify(q.cq); rc != 0 {
			q.mu.Unlock()
			return errnoErr("req notify cq", rc)
		}
		err := q.fill()
		ready := q.head < len(q.pending)
		q.mu.Unlock()
		if err != nil || ready {
			return err
		}
		if err := q.sleep(ctx); err != nil {
			return err
		}
	}
}

// sleep waits until the channel delivers an event (taken and acknowledged), ctx
// ends or the queue is closed.
func (q *cq) sleep(ctx context.Context) error {
	rc, err := q.file.SyscallConn()
	if err != nil || q.isClosed() {
		return verbs.Errorf("ibv: wait", verbs.ErrClosed, err)
	}
	q.file.SetReadDeadline(time.Time{})
	stop := context.AfterFunc(ctx, func() { q.file.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	var got C.int
	err = rc.Read(func(uintptr) bool {
		got = C.ptl_get_event(q.ch)
		return got != 0
	})
	switch {
	case err == nil && got < 0:
		return errnoErr("get cq event", got)
	case err == nil:
		return nil
	case q.isClosed():
		// Close closed the file under the read (the poller's "use of closed file").
		return verbs.Errorf("ibv: wait", verbs.ErrClosed, nil)
	case errors.Is(err, os.ErrDeadlineExceeded) && ctx.Err() != nil:
		return ctx.Err()
	}
	return verbs.Errorf("ibv: wait", verbs.ErrNoResources, err)
}

func (q *cq) isClosed() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.closed
}

// Close destroys the queue; it fails with ErrBusy while queue pairs use it.
func (q *cq) Close() error {
	c := q.ctx
	c.mu.Lock()
	defer c.mu.Unlock()
	q.mu.Lock()
	closed, users := q.closed, q.users
	q.mu.Unlock()
	if closed {
		return verbs.Errorf("ibv: close cq", verbs.ErrClosed, nil)
	}
	if users > 0 {
		return verbs.Errorf("ibv: close cq", verbs.ErrBusy, nil)
	}
	delete(c.cqs, q)
	return q.destroyLocked()
}

// destroyLocked wakes and waits out the waiters, then destroys the queue and its
// channel; the context lock is held.
func (q *cq) destroyLocked() error {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.file.Close() // returns once no waiter is inside the channel read
	rc := C.ibv_destroy_cq(q.cq)
	C.ibv_destroy_comp_channel(q.ch)
	if rc != 0 {
		return errnoErr("destroy cq", rc)
	}
	return nil
}
