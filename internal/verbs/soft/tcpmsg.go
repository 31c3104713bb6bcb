package soft

import (
	"errors"
	"syscall"

	"github.com/goportals/goportals/internal/verbs"
)

// Message mode over a TCP link (see messages.go for the shared-memory side).
//
// Sending: SendMessage writes a SEND frame with token 0 (no request waits for
// its answer, and the receiver answers none unless it must refuse it) behind the
// frames already queued, in the same vectored write, with no pending record and
// no completion. It refuses (ErrNoResources) while frames wait behind a fence or
// for room in the socket, or before the stream is up: the caller's work request
// then keeps the order.
//
// Receiving: when the receive side of a queue pair in message mode reads the
// header of a SEND that is a message (no immediate, at most msgMax bytes), it
// stops there (rx.msg), as at a SEND that waits for a receive, once the payload
// is in the staging buffer; everything before it on the stream has been applied
// and its completions pushed. PollMessages then hands the payload to the
// handler in place, from the staging buffer, with rxMu held, and takes the
// messages that follow it there whole; anything else is left for the next
// receive. While a message is held the poller does not watch the socket (level
// triggered, it would wake for data behind the message), and the PollMessages
// that releases it asks the poller to look again.

// isMessageFrame reports whether the SEND frame f is one a queue pair in
// message mode hands out.
func (l *tcpLink) isMessageFrame(f *frame) bool {
	q := l.q
	return f.kind == frSend && f.flags&ffImm == 0 && f.n <= q.msgMax && q.msgOn.Load()
}

// msgComplete reports whether the payload of the held message is all in the
// staging buffer (rxMu held).
func (l *tcpLink) msgComplete() bool {
	return l.rx.msg && l.rbW-l.rbR >= int(l.rx.f.n)
}

// holdMessage records that a whole message waits at the head of the staging
// buffer (rxMu held) and tells the receive queue's waiters.
func (l *tcpLink) holdMessage() {
	// A receive completion pushed before it goes to the consumer first: the
	// message waits until the completion queue was seen empty.
	l.rx.behind, l.rx.pushed = l.rx.pushed, false
	if !l.msgHeld.Load() {
		l.msgHeld.Store(true)
	}
	l.q.rcq.noteMessage()
}

// readMessage reads more of a held message's payload (rxMu held), moving what
// the staging buffer holds to its start when the payload would not fit behind.
func (l *tcpLink) readMessage() (drained bool, err error) {
	need := int(l.rx.f.n)
	if len(l.rb)-l.rbR < need {
		l.rbW = copy(l.rb, l.rb[l.rbR:l.rbW])
		l.rbR = 0
	}
	m, err := l.read(l.rb[l.rbW:])
	if err == syscall.EAGAIN {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	if m == 0 {
		return false, errors.New("connection closed by peer")
	}
	l.rbW += m
	return !l.msgComplete(), nil
}

// pollMessages hands out the link's held messages, up to max, and reports how
// many, whether the handler asked to stop, and whether it could not look
// (another goroutine receives on the link). Called with the context's progress
// lock held.
func (l *tcpLink) pollMessages(h verbs.MessageHandler, max int) (n int, stop, busy bool) {
	if !l.msgHeld.Load() {
		return 0, false, false
	}
	if !l.rxMu.TryLock() {
		return 0, false, true
	}
	q := l.q
	rx := &l.rx
	if rx.behind {
		if q.rcq.hasCompletion() {
			l.rxMu.Unlock()
			return 0, false, true // (the queue stays ready: Poll is next)
		}
		rx.behind = false
	}
	for n < max && l.msgComplete() && q.State() != verbs.QPClosed {
		size := int(rx.f.n)
		tok := rx.f.token
		more := h(q.msgTag, l.rb[l.rbR:l.rbR+size])
		l.rbR += size
		rx.msg = false
		if tok != 0 {
			// A SEND work request taken as a message: its sender waits for
			// the answer.
			l.answer(frAck, tok, verbs.StatusSuccess, 0)
		}
		n++
		// The next frame, when it is a message whole in the buffer, is held
		// in turn (the receive that would stop at it is spared).
		if avail := l.rbW - l.rbR; avail >= frameLen {
			var f frame
			f.get(l.rb[l.rbR:])
			if l.isMessageFrame(&f) && avail-frameLen >= int(f.n) {
				raceAcquire()
				rx.f = f
				rx.msg = true
				l.rbR += frameLen
			}
		}
		if !more {
			stop = true
			break
		}
	}
	if !rx.msg && rx.kept && l.rbR < l.rbW {
		l.applyLeft()
	}
	if !rx.msg && l.msgHeld.Load() {
		l.msgHeld.Store(false)
		if l.rbR < l.rbW {
			// Frames wait in the buffer, which no look at the socket shows.
			l.rbLeft.Store(true)
			l.nextLook.Store(0)
		}
		if l.viaPoller && !l.failed.Load() {
			l.q.ctx.rearmPoller()
		}
	}
	fail := false
	if !rx.msg && rx.kept {
		// The link failed while they were held: the last of them is out, the
		// failure goes next.
		rx.kept = false
		fail, rx.failLater = rx.failLater, false
		q.ctx.removeLink(l)
	}
	l.rxMu.Unlock()
	if fail {
		l.fail()
	}
	return n, stop, false
}

// applyLeft serves the frames a failed link received whole behind the messages
// just handed out (rxMu held), up to the next whole message, which is held in
// turn: what came before the failure goes out before it.
func (l *tcpLink) applyLeft() {
	for {
		got, drained, err := l.receive()
		if err != nil || drained || got == 0 || l.rx.waitRecv || l.msgComplete() {
			break
		}
	}
	if l.rx.msg && !l.msgComplete() {
		l.rx.msg = false // its payload never came
	}
	// A frame whose payload never comes: the regions it held are let go.
	releaseAll(l.rx.holds)
	l.rx.holds = l.rx.holds[:0]
}

// sendNow writes the message b in one frame at once, with one system call and
// no queue (txMu held, nothing queued before it; it unlocks txMu): the common
// case of a small message, whose trip through the queue (an item, two more
// locks, a gather of the frame's parts) cost a good part of an 8-byte put's
// send. What the socket does not take is queued as usual and waits for room.
func (l *tcpLink) sendNow(b []byte) {
	var buf [smallWrite]byte
	f := frame{kind: frSend, n: uint32(len(b))}
	f.put(buf[:frameLen])
	m := frameLen + copy(buf[frameLen:], b)
	raceRelease()
	k := m
	if testSendCut != nil {
		k = min(max(testSendCut(m), 0), m)
	}
	n, err := 0, error(syscall.EAGAIN)
	if k > 0 {
		n, err = sendFD(l.fd, buf[:k])
	}
	l.nWrites.Add(1)
	switch {
	case err == nil && n == m:
		l.unlockTx()
		return
	case err != nil && err != syscall.EAGAIN:
		l.txMu.Unlock()
		go l.broken(err)
		return
	}
	// The rest of the frame waits for room, as flushTx would leave it.
	l.nSendRest.Add(1)
	it := l.itemLocked()
	copy(it.hdr[:], buf[:frameLen])
	it.inl = append(it.inl[:0], b...)
	it.part[0] = it.inl
	it.parts = it.part[:1]
	l.out = append(l.out, it)
	l.outOff = n
	l.txMu.Unlock()
	l.flushTx()
}

// testSendCut, set by a test, says how many bytes of a frame of m sendNow may
// write (0: as if the socket were full). (Not a write function the test could
// replace: the frame's buffer would escape to the heap, an allocation per
// message.)
var testSendCut func(m int) int

// sendMessage is SendMessage on a TCP link (q.mu held).
func (l *tcpLink) sendMessage(b []byte) error {
	if len(b) > maxInline || l.failed.Load() || l.txWait.Load() {
		return verbs.ErrNoResources
	}
	l.pmu.Lock()
	held := len(l.held) > 0
	l.pmu.Unlock()
	if held {
		return verbs.ErrNoResources // it would overtake frames behind a fence
	}
	if len(b) <= smallWrite-frameLen && l.txMu.TryLock() {
		if len(l.out) == 0 && l.conn != nil && !l.failed.Load() && !l.txWait.Load() {
			l.sendNow(b) // (unlocks txMu)
			return nil
		}
		l.txMu.Unlock() // (a flush that met the lock: item below lets go with unlockTx)
	}
	it := l.item()
	it.inl = append(it.inl[:0], b...)
	it.part[0] = it.inl
	it.parts = it.part[:1]
	f := frame{kind: frSend, n: uint32(len(b))}
	f.put(it.hdr[:])
	raceRelease()
	l.txMu.Lock()
	if l.conn == nil || l.failed.Load() || l.txWait.Load() {
		it.parts = nil
		it.part[0] = nil
		l.free = append(l.free, it)
		l.txMu.Unlock()
		return verbs.ErrNoResources
	}
	l.out = append(l.out, it)
	l.txMu.Unlock()
	l.flushTx()
	return nil
}
