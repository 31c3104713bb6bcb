package loopback

import (
	"encoding/binary"
	"sync/atomic"
	"unsafe"

	"github.com/goportals/goportals/internal/verbs"
)

// blame says which side of a connection a failed request puts in the error state.
type blame uint8

const (
	blameNone   blame = iota
	blameLocal        // the requester's fault: it fails, its peer loses its partner
	blameRemote       // a fault detected by the responder: both enter the error state
)

// outcome is the result of executing one send request.
type outcome struct {
	status  verbs.Status
	who     blame
	blocked bool   // must wait (no receive posted at the peer)
	n       uint32 // bytes transferred
}

// progress runs q's queued send requests in order until one must wait. Called with
// wire.mu held.
func (q *qp) progress() {
	for q.state == verbs.QPReady && q.sq.len() > 0 {
		w := q.sq.front()
		t := q.remote
		if q.peerGone || t.state == verbs.QPClosed || t.state == verbs.QPError {
			q.completeSend(w, verbs.StatusRetryExceeded, 0)
			q.sq.pop()
			q.enterError()
			return
		}
		if t.state != verbs.QPReady || t.remote != q {
			return // the peer has not connected back yet
		}
		o := q.execute(w, t)
		if o.blocked {
			return
		}
		if o.status == verbs.StatusSuccess {
			if w.flags&verbs.SendSignaled != 0 {
				q.completeSend(w, o.status, o.n)
			}
			q.sq.pop()
			continue
		}
		q.completeSend(w, o.status, 0)
		q.sq.pop()
		if o.who == blameRemote {
			q.enterError()
			if t != q {
				t.enterError()
			}
		} else {
			q.fail()
		}
		return
	}
}

// sgl is a resolved scatter-gather list: byte slices of registered (or inline) memory.
type sgl struct {
	n   int
	seg [maxSGE][]byte
}

func (l *sgl) total() uint64 {
	var t uint64
	for i := 0; i < l.n; i++ {
		t += uint64(len(l.seg[i]))
	}
	return t
}

// resolveLocal resolves the SGEs of a request of q against q's regions, requiring local
// write when write is set. It fails on an unknown or foreign lkey, a missing right or an
// SGE outside its region.
func (q *qp) resolveLocal(sg []verbs.SGE, write bool, out *sgl) bool {
	out.n = 0
	for _, s := range sg {
		if s.Length == 0 {
			continue
		}
		m := q.ctx.mrs.byLKey(s.LKey)
		if m == nil || m.pd != q.pd || (write && m.access&verbs.AccessLocalWrite == 0) {
			return false
		}
		b, ok := m.span(s.Addr, s.Length)
		if !ok {
			return false
		}
		out.seg[out.n] = b
		out.n++
	}
	return true
}

// resolveRemote returns n bytes at addr of t's region rkey if the region grants need.
func (t *qp) resolveRemote(rkey uint32, addr uint64, n uint32, need verbs.Access) ([]byte, bool) {
	m := t.ctx.mrs.byRKey(rkey)
	if m == nil || m.pd != t.pd || m.access&need != need {
		return nil, false
	}
	return m.span(addr, n)
}

// copySGL copies src into dst (dst holds at least src.total() bytes).
func copySGL(dst, src *sgl) {
	di, doff := 0, 0
	for si := 0; si < src.n; si++ {
		s := src.seg[si]
		for len(s) > 0 {
			c := copy(dst.seg[di][doff:], s)
			s = s[c:]
			doff += c
			if doff == len(dst.seg[di]) {
				di++
				doff = 0
			}
		}
	}
}

// execute runs one send request from q against its peer t.
func (q *qp) execute(w *sendWQE, t *qp) outcome {
	var local sgl
	sg := w.sg[:w.nsg]
	switch w.op {
	case verbs.OpRDMARead, verbs.OpAtomicFetchAdd, verbs.OpAtomicCmpSwap:
		if !q.resolveLocal(sg, true, &local) {
			return outcome{status: verbs.StatusLocalProtectionError, who: blameLocal}
		}
	default:
		if w.flags&verbs.SendInline != 0 {
			local.n = 0
			if len(w.inline) > 0 {
				local.seg[0], local.n = w.inline, 1
			}
		} else if !q.resolveLocal(sg, false, &local) {
			return outcome{status: verbs.StatusLocalProtectionError, who: blameLocal}
		}
	}
	total := local.total()
	if total > limits.MaxMsgSize {
		return outcome{status: verbs.StatusLocalLengthError, who: blameLocal}
	}
	n := uint32(total)
	switch w.op {
	case verbs.OpSend, verbs.OpSendWithImm:
		return q.deliver(w, t, &local, n)
	case verbs.OpRDMAWrite, verbs.OpRDMAWriteWithImm:
		return q.write(w, t, &local, n)
	case verbs.OpRDMARead:
		if n > 0 {
			src, ok := t.resolveRemote(w.rkey, w.raddr, n, verbs.AccessRemoteRead)
			if !ok {
				return outcome{status: verbs.StatusRemoteAccessError, who: blameRemote}
			}
			var s sgl
			s.seg[0], s.n = src, 1
			copySGL(&local, &s)
		}
		return outcome{n: n}
	default:
		return q.atomic(w, t, &local)
	}
}

// deliver runs a SEND: it consumes the oldest receive posted at t.
func (q *qp) deliver(w *sendWQE, t *qp, src *sgl, n uint32) outcome {
	if t.rq.len() == 0 {
		return outcome{blocked: true}
	}
	r := t.rq.front()
	var dst sgl
	if !t.resolveLocal(r.sg[:r.nsg], true, &dst) {
		t.completeRecv(r, verbs.StatusLocalProtectionError, verbs.WCRecv, 0, 0, 0)
		t.rq.pop()
		return outcome{status: verbs.StatusRemoteOperationError, who: blameRemote}
	}
	if uint64(n) > dst.total() {
		t.completeRecv(r, verbs.StatusLocalLengthError, verbs.WCRecv, 0, 0, 0)
		t.rq.pop()
		return outcome{status: verbs.StatusRemoteInvalidRequest, who: blameRemote}
	}
	copySGL(&dst, src)
	var fl verbs.WCFlags
	if w.op == verbs.OpSendWithImm {
		fl = verbs.WCWithImm
	}
	t.completeRecv(r, verbs.StatusSuccess, verbs.WCRecv, fl, n, w.imm)
	t.rq.pop()
	return outcome{n: n}
}

// write runs an RDMA WRITE (with immediate: consuming the oldest receive posted at t).
func (q *qp) write(w *sendWQE, t *qp, src *sgl, n uint32) outcome {
	imm := w.op == verbs.OpRDMAWriteWithImm
	if imm && t.rq.len() == 0 {
		return outcome{blocked: true}
	}
	if n > 0 {
		dst, ok := t.resolveRemote(w.rkey, w.raddr, n, verbs.AccessRemoteWrite)
		if !ok {
			return outcome{status: verbs.StatusRemoteAccessError, who: blameRemote}
		}
		var d sgl
		d.seg[0], d.n = dst, 1
		copySGL(&d, src)
	}
	if imm {
		t.completeRecv(t.rq.front(), verbs.StatusSuccess, verbs.WCRecvRDMAWithImm, verbs.WCWithImm, n, w.imm)
		t.rq.pop()
	}
	return outcome{n: n}
}

// atomic runs a fetch-and-add or compare-and-swap on a host-endian 8-byte word.
func (q *qp) atomic(w *sendWQE, t *qp, local *sgl) outcome {
	if w.raddr%8 != 0 {
		return outcome{status: verbs.StatusRemoteInvalidRequest, who: blameRemote}
	}
	b, ok := t.resolveRemote(w.rkey, w.raddr, 8, verbs.AccessRemoteAtomic)
	if !ok {
		return outcome{status: verbs.StatusRemoteAccessError, who: blameRemote}
	}
	word := (*uint64)(unsafe.Pointer(unsafe.SliceData(b)))
	var old uint64
	if w.op == verbs.OpAtomicFetchAdd {
		old = atomic.AddUint64(word, w.compareAdd) - w.compareAdd
	} else {
		for {
			old = atomic.LoadUint64(word)
			if old != w.compareAdd || atomic.CompareAndSwapUint64(word, old, w.swap) {
				break
			}
		}
	}
	binary.NativeEndian.PutUint64(local.seg[0], old)
	return outcome{n: 8}
}
