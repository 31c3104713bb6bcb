package soft

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/goportals/goportals/internal/verbs"
)

// pollRx receives and serves frames until the socket is drained, or an incoming
// SEND waits for a receive. It returns the number of frames served.
func (l *tcpLink) pollRx() int {
	if !l.rxMu.TryLock() {
		return 0
	}
	defer l.rxMu.Unlock()
	if l.failed.Load() || l.ended.Load() {
		return 0
	}
	if l.rbLeft.Load() {
		l.rbLeft.Store(false) // read from the buffer below
	}
	n := 0
	for {
		got, drained, err := l.receive()
		if got != 0 && n == 0 && l.quiet.Load() != 0 {
			l.quiet.Store(0)
		}
		n += got
		if err != nil {
			l.lost(err)
			return n
		}
		if drained || l.rx.waitRecv || l.msgComplete() || l.failed.Load() {
			// A destroy (shut) waits on rxMu: a peer that keeps the socket
			// full must not hold it off.
			return n
		}
	}
}

// lost fails the link after a socket error, the end of the stream, a frame
// that broke the protocol, or a refusal of the poller's set (rxMu held). The
// link ends: its socket is not read, looked at or watched again (ended), else,
// until broken marks it failed, the rounds and the poller would meet the same
// end at every look, each time starting another broken.
func (l *tcpLink) lost(err error) {
	l.ended.Store(true) // (once: nothing reads or watches an ended link)
	if l.viaPoller {
		l.q.ctx.setDisarm(l)
		l.q.ctx.unwatch(l) // the socket stays readable (EOF) until it closes
	}
	// broken takes the queue pair's lock, and shut rxMu: not from here.
	go func() {
		if h := testLostHook.Load(); h != nil {
			(*h)(l)
		}
		l.broken(err)
	}()
}

// testLostHook, set by a test, runs before broken in the goroutine lost starts.
var testLostHook atomic.Pointer[func(*tcpLink)]

// receive reads what the socket holds and serves the complete frames (rxMu
// held). drained says the last read found the socket empty (or took less than
// it asked for: the socket held no more at that time).
func (l *tcpLink) receive() (frames int, drained bool, err error) {
	rx := &l.rx
	if rx.msg {
		// A message: its payload stays in the buffer for PollMessages.
		if l.msgComplete() {
			return 0, false, nil
		}
		drained, err := l.readMessage()
		if err != nil || drained {
			return 0, drained, err
		}
		l.holdMessage()
		return 1, false, nil
	}
	if rx.waitRecv {
		if err := l.beginSend(); err != nil || rx.waitRecv {
			return 0, false, err
		}
		if rx.left == 0 {
			return 1, false, l.endFrame()
		}
	}
	// A large payload goes straight to its destination, as much of it as the
	// socket holds: a read that fills its part reads on.
	for rx.body && l.rbR == l.rbW && rx.left >= directRead && rx.di < len(rx.dst) && rx.dst[rx.di] != nil {
		d := rx.dst[rx.di][rx.doff:]
		if uint32(len(d)) > rx.left {
			d = d[:rx.left]
		}
		m, err := l.read(d)
		if err == syscall.EAGAIN {
			return 0, true, nil
		}
		if err != nil {
			return 0, false, err
		}
		if m == 0 {
			return 0, false, errors.New("connection closed by peer")
		}
		l.advance(m)
		if rx.left == 0 {
			l.setThin(false)
			return 1, m < len(d), l.endFrame()
		}
		if m < len(d) {
			// The socket is drained; a small read of a large payload: the
			// next poll rounds wait a little (tcpBulkGap).
			l.setThin(m < tcpBulkRead && rx.left >= tcpBulkRead)
			return 0, true, nil
		}
	}
	if l.rbR == l.rbW {
		l.rbR, l.rbW = 0, 0
		m, err := l.read(l.rb)
		if err == syscall.EAGAIN {
			return 0, true, nil
		}
		if err != nil {
			return 0, false, err
		}
		if m == 0 {
			return 0, false, errors.New("connection closed by peer")
		}
		l.rbW = m
		drained = m < len(l.rb)
	}
	for l.rbR < l.rbW {
		if !rx.body {
			c := copy(rx.hdr[rx.have:], l.rb[l.rbR:l.rbW])
			rx.have += c
			l.rbR += c
			if rx.have < frameLen {
				break
			}
			raceAcquire()
			if raceEnabled {
				// The race detector learns of a vectored write's reads of the
				// send buffers only once the call has returned: the peer's
				// answer can arrive first, and a completion it reports would
				// race the write it answers. The write is made under txMu:
				// waiting for txMu orders its reads before what follows.
				l.txMu.Lock()
				l.unlockTx() // (the barrier; a flush it held off goes now)
			}
			rx.have = 0
			rx.f.get(rx.hdr[:])
			if err := l.beginFrame(); err != nil {
				return frames, false, err
			}
			if rx.waitRecv {
				return frames, false, nil
			}
			if rx.msg {
				if l.msgComplete() {
					frames++
					l.holdMessage()
				}
				return frames, false, nil
			}
			if rx.left == 0 {
				frames++
				if err := l.endFrame(); err != nil {
					return frames, false, err
				}
			}
			continue
		}
		m := min(int(rx.left), l.rbW-l.rbR)
		src := l.rb[l.rbR : l.rbR+m]
		for len(src) > 0 {
			if rx.di >= len(rx.dst) || rx.dst[rx.di] == nil {
				l.advance(len(src))
				src = nil
				break
			}
			c := copy(rx.dst[rx.di][rx.doff:], src)
			src = src[c:]
			l.advance(c)
		}
		l.rbR += m
		if rx.left == 0 {
			frames++
			if err := l.endFrame(); err != nil {
				return frames, false, err
			}
		}
	}
	return frames, drained, nil
}

// read reads from the socket (non-blocking) and counts the call.
func (l *tcpLink) read(b []byte) (int, error) {
	if l.rx.kept {
		// The link failed: only what the staging buffer holds is served.
		return 0, syscall.EAGAIN
	}
	m, err := readFD(l.fd, b)
	l.nReads.Add(1)
	if err == syscall.EAGAIN {
		l.nEmpty.Add(1)
	}
	return m, err
}

// setThin records whether the last read of a large payload was small.
func (l *tcpLink) setThin(v bool) {
	if l.thin.Load() != v {
		l.thin.Store(v)
	}
}

// advance records n payload bytes placed (or discarded).
func (l *tcpLink) advance(n int) {
	rx := &l.rx
	rx.left -= uint32(n)
	for n > 0 && rx.di < len(rx.dst) {
		d := rx.dst[rx.di]
		if d == nil {
			rx.doff += n
			n = 0
			break
		}
		c := min(n, len(d)-rx.doff)
		rx.doff += c
		n -= c
		if rx.doff == len(d) {
			rx.di++
			rx.doff = 0
		}
	}
}

// beginFrame decides where the payload of the frame just read goes.
func (l *tcpLink) beginFrame() error {
	rx := &l.rx
	f := &rx.f
	if f.n > maxFrame {
		return fmt.Errorf("frame of %d bytes", f.n)
	}
	rx.body, rx.left, rx.dst, rx.di, rx.doff, rx.holds, rx.act = f.n > 0, 0, rx.dst[:0], 0, 0, rx.holds[:0], actNone
	rx.tok = f.token
	l.markBulk(uint64(f.n))
	q := l.q
	c := q.ctx
	discardAll := func() {
		rx.left = f.n
		rx.dst = append(rx.dst, nil)
	}
	switch f.kind {
	case frWrite:
		if f.n > 0 || f.flags&ffImm != 0 {
			b, h, ok := c.local(f.rkey, f.raddr, uint64(f.n), verbs.AccessRemoteWrite, q.pd.id)
			if !ok {
				discardAll()
				rx.act, rx.st = actNak, verbs.StatusRemoteAccessError
				break
			}
			rx.left = f.n
			rx.dst = append(rx.dst, b)
			rx.holds = append(rx.holds, h)
		}
		rx.act = actWrite
	case frSend:
		if l.isMessageFrame(f) {
			rx.msg, rx.body = true, false // (tcpmsg.go)
			return nil
		}
		return l.beginSend()
	case frRead:
		b, h, ok := c.local(f.rkey, f.raddr, uint64(f.n), verbs.AccessRemoteRead, q.pd.id)
		rx.body = false
		if !ok {
			l.answer(frNak, f.token, verbs.StatusRemoteAccessError, 0)
			break
		}
		it := l.item()
		it.part[0], it.hold[0] = b, h
		it.parts, it.holds = it.part[:1], it.hold[:1]
		rf := frame{kind: frReadRsp, token: f.token, n: f.n}
		rf.put(it.hdr[:])
		if !l.enqueue(it) {
			release(h)
		}
	case frFetchAdd, frCmpSwap:
		rx.body = false
		if f.raddr%8 != 0 {
			l.answer(frNak, f.token, verbs.StatusRemoteInvalidRequest, 0)
			break
		}
		b, h, ok := c.local(f.rkey, f.raddr, 8, verbs.AccessRemoteAtomic, q.pd.id)
		if !ok {
			l.answer(frNak, f.token, verbs.StatusRemoteAccessError, 0)
			break
		}
		p := (*uint64)(unsafe.Pointer(unsafe.SliceData(b)))
		var old uint64
		if f.kind == frFetchAdd {
			old = atomic.AddUint64(p, f.a) - f.a
		} else {
			for {
				old = atomic.LoadUint64(p)
				if old != f.a || atomic.CompareAndSwapUint64(p, old, f.b) {
					break
				}
			}
		}
		release(h)
		l.answer(frAtomRsp, f.token, verbs.StatusSuccess, old)
	case frAck:
		rx.body = false
		l.complete(f.token, verbs.StatusSuccess, 0)
	case frNak:
		rx.body = false
		st := verbs.Status(f.status)
		if st == verbs.StatusSuccess {
			st = verbs.StatusRemoteOperationError
		}
		if st == verbs.StatusLocalLengthError {
			st = verbs.StatusRemoteInvalidRequest
		}
		if f.token == 0 {
			// A message sent without a work request was refused: the
			// queue pair's later work learns it.
			return fmt.Errorf("the peer refused a message: %v", st)
		}
		l.complete(f.token, st, 0)
	case frReadRsp:
		l.pmu.Lock()
		p := l.pending[f.token]
		l.pmu.Unlock()
		if p == nil {
			return fmt.Errorf("READ response for unknown request %d", f.token)
		}
		rx.left = f.n
		rx.dst = append(rx.dst, p.local...)
		rx.act = actReadRsp
	case frAtomRsp:
		rx.body = false
		l.pmu.Lock()
		p := l.pending[f.token]
		l.pmu.Unlock()
		if p == nil {
			return fmt.Errorf("atomic response for unknown request %d", f.token)
		}
		var v [8]byte
		binary.LittleEndian.PutUint64(v[:], f.a)
		rest := v[:]
		for _, b := range p.local {
			rest = rest[copy(b, rest):]
		}
		l.complete(f.token, verbs.StatusSuccess, 8)
	default:
		return fmt.Errorf("unknown frame kind %d", f.kind)
	}
	if rx.left == 0 {
		rx.body = false
	}
	return nil
}

// endFrame runs what follows a frame's payload.
func (l *tcpLink) endFrame() error {
	rx := &l.rx
	if l.bulkUntil.Load() != 0 {
		l.bulkUntil.Store(0) // the large frame is all here
	}
	releaseAll(rx.holds)
	rx.holds = rx.holds[:0]
	rx.body = false
	act := rx.act
	rx.act = actNone
	f := &rx.f
	switch act {
	case actNak:
		l.answer(frNak, rx.tok, rx.st, 0)
	// The answer is queued before the completion is pushed: a reply the
	// application posts on seeing the completion then carries it.
	case actWrite:
		if f.flags&ffImm == 0 {
			l.answer(frAck, rx.tok, verbs.StatusSuccess, 0)
			break
		}
		wc, ok := l.consumeImm(f.imm, f.n)
		if !ok {
			l.answer(frNak, rx.tok, verbs.StatusRNRRetryExceeded, 0)
			break
		}
		l.answer(frAck, rx.tok, verbs.StatusSuccess, 0)
		rx.pushed = true
		l.q.rcq.push(wc)
	case actSend:
		q := l.q
		wc := verbs.WorkCompletion{ID: rx.recvID, Status: rx.st, Opcode: verbs.WCRecv, ByteLen: f.n, QPNum: q.num}
		if f.flags&ffImm != 0 {
			wc.Flags, wc.Imm = verbs.WCWithImm, f.imm
		}
		if rx.st != verbs.StatusSuccess {
			l.answer(frNak, rx.tok, verbs.StatusRemoteOperationError, 0)
		} else if rx.tok != 0 { // (token 0: a message, which waits for no answer)
			l.answer(frAck, rx.tok, verbs.StatusSuccess, 0)
		}
		rx.pushed = true
		q.rcq.push(wc)
	case actReadRsp:
		l.complete(rx.tok, verbs.StatusSuccess, f.n)
	}
	return nil
}

// beginSend places an incoming SEND into the next posted receive. With none
// posted, the frame waits (progress retries it) up to rnrWait, then the sender's
// request fails with StatusRNRRetryExceeded.
func (l *tcpLink) beginSend() error {
	rx := &l.rx
	f := &rx.f
	q := l.q
	q.mu.Lock()
	if q.rqHead == q.rqTail {
		q.mu.Unlock()
		if !rx.waitRecv {
			rx.waitRecv, rx.waitSince = true, time.Now()
			l.stalled.Store(true)
			return nil
		}
		if time.Since(rx.waitSince) < rnrWait {
			return nil
		}
		// No receive for too long: discard and refuse.
		rx.waitRecv = false
		l.stalled.Store(false)
		rx.body = f.n > 0
		rx.left = f.n
		rx.dst = append(rx.dst, nil)
		rx.act, rx.st = actNak, verbs.StatusRNRRetryExceeded
		if rx.left == 0 {
			rx.body = false
		}
		return nil
	}
	if rx.waitRecv {
		rx.waitRecv = false
		l.stalled.Store(false)
		rx.body = f.n > 0
	}
	e := &q.rq[q.rqHead%uint64(len(q.rq))]
	q.rqHead++
	id := e.id
	if uint64(f.n) > e.total {
		rx.pushed = true
		q.rcq.push(verbs.WorkCompletion{ID: id, Status: verbs.StatusLocalLengthError, Opcode: verbs.WCRecv, QPNum: q.num})
		q.mu.Unlock()
		rx.left = f.n
		rx.dst = append(rx.dst, nil)
		rx.act, rx.st = actNak, verbs.StatusLocalLengthError
		if rx.left == 0 {
			rx.body = false
		}
		return nil
	}
	sg := e.sg
	st := verbs.StatusSuccess
	left := uint64(f.n)
	for _, s := range sg {
		if left == 0 {
			break
		}
		n := min(uint64(s.Length), left)
		b, h, ok := q.ctx.local(s.LKey, s.Addr, n, verbs.AccessLocalWrite, q.pd.id)
		if !ok {
			st = verbs.StatusLocalProtectionError
			break
		}
		if n > 0 { // an empty element holds no bytes (nil would discard)
			rx.dst = append(rx.dst, b)
		}
		rx.holds = append(rx.holds, h)
		left -= n
	}
	q.mu.Unlock()
	if st != verbs.StatusSuccess {
		releaseAll(rx.holds)
		rx.holds = rx.holds[:0]
		rx.dst = append(rx.dst[:0], nil)
	}
	rx.left = f.n
	rx.act, rx.st, rx.recvID = actSend, st, id
	if rx.left == 0 {
		rx.body = false
	}
	return nil
}

// rnrWait is how long an incoming SEND waits for a posted receive.
const rnrWait = 5 * time.Second

// consumeImm consumes a posted receive for an RDMA WRITE with immediate and
// returns the completion to push (false: no receive is posted).
func (l *tcpLink) consumeImm(imm uint32, n uint32) (verbs.WorkCompletion, bool) {
	q := l.q
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.rqHead == q.rqTail {
		return verbs.WorkCompletion{}, false
	}
	e := &q.rq[q.rqHead%uint64(len(q.rq))]
	q.rqHead++
	return verbs.WorkCompletion{ID: e.id, Status: verbs.StatusSuccess, Opcode: verbs.WCRecvRDMAWithImm,
		ByteLen: n, QPNum: q.num, Flags: verbs.WCWithImm, Imm: imm}, true
}
