package soft

import (
	"errors"
	"fmt"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/goportals/goportals/internal/verbs"
)

// enqueue adds a frame to send and tries to send at once.
func (l *tcpLink) enqueue(it *outItem) bool {
	if !l.queue(it) {
		return false
	}
	l.flushTx()
	return true
}

// queue appends frames to the send queue, in order, unless the link failed;
// it reports whether it did. The caller writes them (flushTx) or leaves them
// to a frame that follows.
func (l *tcpLink) queue(its ...*outItem) bool {
	// The stream carries happens-before edges the race detector cannot see: what
	// this goroutine wrote before the frame, the peer sees after it.
	raceRelease()
	l.txMu.Lock()
	defer l.txMu.Unlock()
	if l.failed.Load() {
		return false
	}
	l.out = append(l.out, its...)
	return true
}

// flushTx writes queued frames until the socket is full; it reports whether
// frames are still waiting (true too where it left them to txMu's holder).
// It does not wait for txMu. Where another holds it, the frames are the
// holder's to write: it writes the queue (flushLocked), or calls flushTx after
// letting go (enqueue, sendMessage, start, complete), or fails the link, or
// lets go with unlockTx, which writes them when txPend says a flush met the
// lock. The flag is set before the second try: whoever lets the lock go after
// that try failed does so after the flag was set, and sees it.
func (l *tcpLink) flushTx() bool {
	if !l.txMu.TryLock() {
		l.txPend.Store(true)
		if !l.txMu.TryLock() {
			return true
		}
	}
	if l.txPend.Load() {
		l.txPend.Store(false)
	}
	defer l.txMu.Unlock()
	return l.flushLocked()
}

// unlockTx lets txMu go where the holder wrote nothing, and writes the queued
// frames if a flush found the lock taken meanwhile (see flushTx).
func (l *tcpLink) unlockTx() {
	l.txMu.Unlock()
	if l.txPend.Load() {
		l.flushTx()
	}
}

// flushLocked is flushTx with txMu held.
func (l *tcpLink) flushLocked() bool {
	if l.conn == nil || l.failed.Load() {
		return false
	}
	for len(l.out) > 0 {
		l.iov = l.iov[:0]
		skip := l.outOff
		for _, it := range l.out {
			if len(l.iov) >= 60 {
				break
			}
			for i := -1; i < len(it.parts); i++ {
				b := it.hdr[:]
				if i >= 0 {
					b = it.parts[i]
				}
				if skip >= len(b) {
					skip -= len(b)
					continue
				}
				l.iov = append(l.iov, b[skip:])
				skip = 0
			}
		}
		n, err := writev(l.fd, l.iov)
		l.nWrites.Add(1)
		if err == syscall.EAGAIN {
			if !l.txWait.Swap(true) && l.viaPoller {
				l.q.ctx.wakePoller() // it waits for room in the socket
			}
			return true
		}
		if err != nil {
			go l.broken(err)
			return false
		}
		// Retire fully written frames.
		n += l.outOff
		l.outOff = 0
		k := 0
		for ; k < len(l.out); k++ {
			size := frameLen
			for _, p := range l.out[k].parts {
				size += len(p)
			}
			if n < size {
				l.outOff = n
				break
			}
			n -= size
			it := l.out[k]
			releaseAll(it.holds)
			if it.pool && len(l.free) < 256 {
				clear(it.part[:])
				clear(it.hold[:])
				it.parts, it.holds, it.fence, it.read = nil, nil, false, false
				l.free = append(l.free, it)
			}
		}
		clear(l.out[:k])
		l.out = append(l.out[:0], l.out[k:]...)
	}
	if l.txWait.Load() {
		l.txWait.Store(false)
	}
	if l.ackDue.Load() != 0 {
		l.ackDue.Store(0)
		l.q.ctx.tcp.acks.Add(-1)
	}
	return false
}

// tcpAnswerDelay is how long the ACK of a SEND or WRITE waits for a frame to
// ride with (a variable for the tests).
var tcpAnswerDelay = 0 * time.Microsecond

// answer queues a response frame with no payload. An ACK is not written at once
// where the poller serves the link: it rides with the next frame the link sends
// (the reply the application posts to the SEND it answers), or goes alone after
// tcpAnswerDelay. Other answers (NAKs, atomics' old values) are written at once.
func (l *tcpLink) answer(kind uint8, tok uint64, st verbs.Status, old uint64) {
	it := l.item()
	f := frame{kind: kind, token: tok, status: uint8(st), a: old}
	f.put(it.hdr[:])
	if kind != frAck || !l.viaPoller {
		l.enqueue(it)
		return
	}
	raceRelease()
	l.txMu.Lock()
	if l.failed.Load() {
		l.txMu.Unlock()
		return
	}
	l.out = append(l.out, it)
	first := l.ackDue.Load() == 0
	if first {
		l.ackDue.Store(tcpClock() + int64(tcpAnswerDelay))
		l.q.ctx.tcp.acks.Add(1)
	}
	l.unlockTx()
	if first {
		l.q.ctx.ackQueued()
	}
}

// tcpEpoch is the origin of tcpClock.
var tcpEpoch = time.Now()

// tcpClock returns monotonic nanoseconds since tcpEpoch.
func tcpClock() int64 { return int64(time.Since(tcpEpoch)) }

// item returns a reusable frame item (an answer, or a READ's data).
func (l *tcpLink) item() *outItem {
	l.txMu.Lock()
	it := l.itemLocked()
	l.unlockTx()
	return it
}

// itemLocked is item with txMu held.
func (l *tcpLink) itemLocked() *outItem {
	var it *outItem
	if len(l.free) == 0 {
		// A burst (a window of requests, each answered) empties the list:
		// refill it with a slab, one allocation per tcpSlab items, not one each.
		slab := make([]outItem, tcpSlab)
		for i := range slab {
			slab[i].pool = true
			l.free = append(l.free, &slab[i])
		}
	}
	n := len(l.free)
	it = l.free[n-1]
	l.free = l.free[:n-1]
	return it
}

// tcpSlab is how many frame items or pending records a link allocates at once
// when its free list runs dry.
const tcpSlab = 32

// postSend checks and queues send work requests (q.mu held).
func (l *tcpLink) postSend(wrs []verbs.SendWR) error {
	q := l.q
	for i := range wrs {
		wr := &wrs[i]
		if q.State() != verbs.QPReady || l.failed.Load() {
			// The first request after the peer vanished learns it (as a reliable
			// connection's retries would); later ones are flushed.
			st := verbs.StatusWorkRequestFlushed
			if l.failed.Load() && l.dead.CompareAndSwap(false, true) {
				st = verbs.StatusRetryExceeded
			}
			q.scq.push(verbs.WorkCompletion{ID: wr.ID, Status: st, Opcode: verbs.OpcodeOf(wr.Opcode), QPNum: q.num})
			continue
		}
		if len(wr.SG) > q.maxSGE || wr.Opcode > verbs.OpAtomicCmpSwap {
			return verbs.Errorf(postOp("post_send", i), verbs.ErrInvalidArgument, nil)
		}
		l.pmu.Lock()
		full := len(l.pending) >= len(q.sq)
		l.pmu.Unlock()
		if full {
			return errSendQueueFull
		}
		total := verbs.TotalLength(wr.SG)
		if total > maxFrame {
			return verbs.Errorf(postOp("post_send", i), verbs.ErrInvalidArgument, fmt.Errorf("%d bytes", total))
		}
		atomic := wr.Opcode == verbs.OpAtomicFetchAdd || wr.Opcode == verbs.OpAtomicCmpSwap
		if atomic && total != 8 {
			return verbs.Errorf(postOp("post_send", i), verbs.ErrInvalidArgument, fmt.Errorf("atomics move 8 bytes"))
		}
		if wr.Flags&verbs.SendInline != 0 && total > uint64(attr.MaxInline) {
			return verbs.Errorf(postOp("post_send", i), verbs.ErrInvalidArgument,
				fmt.Errorf("inline send of %d bytes above %d", total, attr.MaxInline))
		}
		// Resolve the local memory now: a bad SGE fails this request alone.
		need := verbs.Access(0)
		if wr.Opcode == verbs.OpRDMARead || atomic {
			need = verbs.AccessLocalWrite
		}
		// The request's frame, and its pending record: from the link's free
		// lists, with room for four parts and holds (no allocation per request
		// up to that).
		it := l.item()
		l.pmu.Lock()
		if len(l.pfree) == 0 {
			slab := make([]tcpPending, tcpSlab)
			for i := range slab {
				l.pfree = append(l.pfree, &slab[i])
			}
		}
		n := len(l.pfree)
		p := l.pfree[n-1]
		l.pfree = l.pfree[:n-1]
		l.pmu.Unlock()
		isRead := wr.Opcode == verbs.OpRDMARead || atomic
		parts, holds := it.part[:0], it.hold[:0]
		if isRead {
			parts, holds = p.part[:0], p.hold[:0]
		}
		ok := true
		if wr.Flags&verbs.SendInline != 0 && !isRead {
			buf := it.inl[:0]
			for _, s := range wr.SG {
				if s.Length > 0 {
					buf = append(buf, unsafe.Slice((*byte)(addrPtr(s.Addr)), s.Length)...)
				}
			}
			it.inl = buf
			parts = append(parts, buf)
		} else {
			for _, s := range wr.SG {
				b, h, good := q.ctx.local(s.LKey, s.Addr, uint64(s.Length), need, q.pd.id)
				if !good {
					ok = false
					break
				}
				holds = append(holds, h)
				if len(b) > 0 { // an empty element holds no bytes (nil would discard)
					parts = append(parts, b)
				}
			}
		}
		if !ok {
			releaseAll(holds)
			q.state.Store(uint32(verbs.QPError))
			q.scq.push(verbs.WorkCompletion{ID: wr.ID, Status: verbs.StatusLocalProtectionError,
				Opcode: verbs.OpcodeOf(wr.Opcode), QPNum: q.num})
			l.dead.Store(true)
			// broken takes the queue pair's lock, which the caller holds.
			go l.broken(errors.New("local protection error"))
			return nil
		}
		l.pmu.Lock()
		l.next++
		tok := l.next
		p.wr, p.signal = *wr, wr.Flags&verbs.SendSignaled != 0
		p.wr.SG = nil
		l.pending[tok] = p
		l.order = append(l.order, tok)
		l.pmu.Unlock()
		f := frame{token: tok, raddr: wr.RemoteAddr, rkey: wr.RKey, n: uint32(total), imm: wr.Imm}
		switch wr.Opcode {
		case verbs.OpSend, verbs.OpSendWithImm:
			f.kind = frSend
			it.parts, it.holds = parts, holds
		case verbs.OpRDMAWrite, verbs.OpRDMAWriteWithImm:
			f.kind = frWrite
			it.parts, it.holds = parts, holds
		case verbs.OpRDMARead:
			f.kind = frRead
			p.local, p.holds = parts, holds
		case verbs.OpAtomicFetchAdd:
			f.kind, f.a = frFetchAdd, wr.CompareAdd
			p.local, p.holds = parts, holds
		case verbs.OpAtomicCmpSwap:
			f.kind, f.a, f.b = frCmpSwap, wr.CompareAdd, wr.Swap
			p.local, p.holds = parts, holds
		}
		if wr.Opcode == verbs.OpSendWithImm || wr.Opcode == verbs.OpRDMAWriteWithImm {
			f.flags |= ffImm
		}
		f.put(it.hdr[:])
		l.pmu.Lock()
		if isRead {
			l.reads++
		}
		// A fenced request waits for the READs and atomics before it.
		hold := len(l.held) > 0 || (wr.Flags&verbs.SendFence != 0 && l.reads-b2i(isRead) > 0)
		if hold {
			it.fence = wr.Flags&verbs.SendFence != 0
			it.read = isRead
			l.held = append(l.held, it)
			l.pmu.Unlock()
			continue
		}
		l.pmu.Unlock()
		if !l.enqueue(it) {
			releaseAll(it.holds)
		}
	}
	return nil
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// unfence returns the frames a fence held that may go now, no READ or atomic
// before them being outstanding, and keeps the others (pmu held).
func (l *tcpLink) unfence() []*outItem {
	var ready []*outItem
	i := 0
	for ; i < len(l.held); i++ {
		it := l.held[i]
		if it.fence && l.reads-countReads(l.held[i:]) > 0 {
			break
		}
		ready = append(ready, it)
	}
	l.held = append(l.held[:0], l.held[i:]...)
	return ready
}

// testUnfencedHook, set by a test, runs in complete after the frames a fence
// held were queued, before they are written.
var testUnfencedHook atomic.Pointer[func(*tcpLink)]

// countReads counts the READs and atomics among frames not yet sent.
func countReads(its []*outItem) int {
	n := 0
	for _, it := range its {
		if it.read {
			n++
		}
	}
	return n
}

// complete finishes the request tok with st (the receive side calls it, rxMu
// held). The frames a fence held behind the request go out before any request
// posted after they were released.
func (l *tcpLink) complete(tok uint64, st verbs.Status, byteLen uint32) bool {
	l.pmu.Lock()
	p := l.pending[tok]
	if p == nil {
		l.pmu.Unlock()
		return false
	}
	delete(l.pending, tok)
	var ready []*outItem
	if op := p.wr.Opcode; op == verbs.OpRDMARead || op == verbs.OpAtomicFetchAdd || op == verbs.OpAtomicCmpSwap {
		l.reads--
		if len(l.held) > 0 {
			ready = l.unfence()
		}
	}
	if len(l.order) > 0 && l.order[0] == tok {
		// Shift rather than reslice: the array keeps its room (no allocation
		// per request).
		l.order = l.order[:copy(l.order, l.order[1:])]
	} else {
		for i, t := range l.order {
			if t == tok {
				l.order = append(l.order[:i], l.order[i+1:]...)
				break
			}
		}
	}
	var dropped []*outItem
	if len(ready) > 0 {
		// Queued before pmu is let go (the lock order is pmu, then txMu):
		// a request posted from then on finds the fence cleared and must go
		// after these. On an error the link fails: they are flushed with its
		// other requests.
		if st != verbs.StatusSuccess || !l.queue(ready...) {
			dropped = ready
		}
	}
	l.pmu.Unlock()
	for _, it := range dropped {
		releaseAll(it.holds)
	}
	releaseAll(p.holds)
	if st != verbs.StatusSuccess {
		l.q.mu.Lock()
		if l.q.State() == verbs.QPReady {
			l.q.state.Store(uint32(verbs.QPError))
		}
		l.q.mu.Unlock()
	}
	if p.signal || st != verbs.StatusSuccess {
		l.q.scq.push(verbs.WorkCompletion{ID: p.wr.ID, Status: st, Opcode: verbs.OpcodeOf(p.wr.Opcode),
			ByteLen: byteLen, QPNum: l.q.num})
		if l.q.scq == l.q.rcq {
			// (called by the receive side, rxMu held) a message the peer
			// sent after this answer goes to the consumer after it.
			l.rx.pushed = true
		}
	}
	// The record goes back to the free list (its parts no longer needed: a
	// READ's data and an atomic's value have landed).
	clear(p.part[:])
	clear(p.hold[:])
	p.local, p.holds, p.wr = nil, nil, verbs.SendWR{}
	l.pmu.Lock()
	if len(l.pfree) < 256 {
		l.pfree = append(l.pfree, p)
	}
	l.pmu.Unlock()
	if st != verbs.StatusSuccess {
		l.dead.Store(true) // the error completion told the loss; later requests flush
		go l.broken(fmt.Errorf("peer answered %v", st))
		return true
	}
	if len(ready) > len(dropped) {
		if h := testUnfencedHook.Load(); h != nil {
			(*h)(l)
		}
		l.flushTx()
	}
	return true
}
