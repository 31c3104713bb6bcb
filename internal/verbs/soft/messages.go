package soft

import (
	"sync/atomic"

	"github.com/goportals/goportals/internal/verbs"
)

// Message mode (verbs.MessageQP, MessageCQ, MessageSender). A queue pair in
// message mode leaves every single-fragment SEND without immediate of at most
// msgMax bytes in its inbound ring when a progress round drains it (drain stops
// there, as at a SEND that waits for a receive, and tells the receive queue's
// waiters). PollMessages, under the context's progress lock but not the queue
// pair's lock, hands such messages to the handler straight from the ring (ring
// layout: the payload of a single-fragment SEND is contiguous unless it wraps
// around the ring's end, when it is copied to msgBuf) and consumes them. Because
// drain applies everything before a message and stops at it, and PollMessages
// stops at anything that is not a message, the ring's order is kept.
//
// The handler runs with the progress lock held and the queue pair's lock free:
// it may post to any queue pair (a cross-memory transfer runs synchronously inside
// it), and a nested Poll or Wait finds the progress lock taken and drives nothing,
// so no drain re-enters the ring being read. Closing a queue pair or the context
// takes the progress lock: a handler must never do that.

var (
	_ verbs.MessageQP     = (*qp)(nil)
	_ verbs.MessageSender = (*qp)(nil)
	_ verbs.MessageCQ     = (*cq)(nil)
)

// EnableMessages switches message mode on for incoming SENDs of at most maxLen
// bytes, handed out with tag (see verbs.MessageQP). Only queue pairs not yet
// connected take it; over TCP the link's receive side holds messages in its
// staging buffer (tcpmsg.go).
func (q *qp) EnableMessages(tag uint64, maxLen int) error {
	if maxLen <= 0 || maxLen > maxPayload {
		return verbs.Errorf("enable_messages", verbs.ErrInvalidArgument, nil)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.State() != verbs.QPInit {
		return verbs.Errorf("enable_messages", verbs.ErrQPState, nil)
	}
	q.msgTag, q.msgMax = tag, uint32(maxLen)
	if q.msgBuf == nil {
		q.msgBuf = make([]byte, hdrInline+maxPayload)
	}
	q.msgOn.Store(true)
	return nil
}

// messageAtHead reports, with the progress lock held, whether the only work of q
// is a message at the head of its inbound ring that PollRound of mq hands out: q
// is in message mode with mq as its receive queue, ready, with nothing to issue,
// complete or fail (see hasWork).
func (q *qp) messageAtHead(mq *cq) bool {
	if q.rcq != mq || !q.msgOn.Load() || q.State() != verbs.QPReady || q.busy.Load() || q.dead.Load() ||
		q.in == nil || atomic.LoadUint64(q.out.errToken()) != 0 || atomic.LoadUint32(q.in.closedWord()) != 0 {
		return false
	}
	var m msg
	return q.in.peek(&m) && q.isMessage(&m)
}

// isMessage reports whether the peeked header m is one a queue pair in message
// mode hands out: a well-formed single-fragment SEND without immediate, short
// enough.
func (q *qp) isMessage(m *msg) bool {
	inl := uint32(m.status)
	return m.op == opSend && m.flags&(flHdr|flImm) == flHdr && inl <= hdrInline &&
		(m.len == 0 || inl == hdrInline) && inl+m.len <= q.msgMax && !q.recvOn
}

// PollMessages hands out up to max messages of the queue pairs in message mode
// that complete receives here (see verbs.MessageCQ).
func (q *cq) PollMessages(h verbs.MessageHandler, max int) (int, error) {
	if q.closed.Load() {
		return 0, verbs.Errorf("poll_messages", verbs.ErrClosed, nil)
	}
	c := q.ctx
	c.markPolled()
	if countProgLocks {
		progLocks.Add(1)
	}
	if !c.progMu.TryLock() {
		return 0, nil
	}
	n := q.pollMessagesLocked(h, max)
	c.progMu.Unlock()
	return n, nil
}

// PollRound is one round of a consumer that polls messages first: PollMessages,
// and when it handed out none, Poll (msgs is PollMessages' answer, n Poll's),
// with the progress lock taken once instead of twice. A consumer that spins
// waiting, with nothing arriving, runs such rounds back to back; what a message
// waits for before it is seen is half of one. A message that lands during the
// call's own progress round is handed out by the same call unless that round
// made completions, which go out first.
func (q *cq) PollRound(h verbs.MessageHandler, max int, wc []verbs.WorkCompletion) (msgs, n int, err error) {
	if q.closed.Load() {
		return 0, 0, verbs.Errorf("poll_messages", verbs.ErrClosed, nil)
	}
	c := q.ctx
	c.markPolled()
	if countProgLocks {
		progLocks.Add(1)
	}
	if c.progMu.TryLock() {
		if msgs = q.pollMessagesLocked(h, max); msgs > 0 {
			c.progMu.Unlock()
			return msgs, 0, nil
		}
		if testBeforeRound != nil {
			testBeforeRound()
		}
		done, head := c.progressRound(q)
		if (head || q.msgReady.Load()) && !q.hasCompletion() {
			// A message landed after the look above (as often as not a
			// message is seen first in the round, the longer part of an idle
			// call), at the head of a ring or behind what the round's drain
			// applied: hand it out now, not a whole call later. Not when the
			// round made completions: the receive of a SEND that came before
			// the message on its queue pair may be one, and goes out first
			// (as Poll would, before the next call's messages).
			if msgs = q.pollMessagesLocked(h, max); msgs > 0 {
				c.progMu.Unlock()
				return msgs, 0, nil
			}
		}
		c.progMu.Unlock()
		c.pollLinksAfter(done)
		if q.msgReady.Load() && !q.hasCompletion() && c.progMu.TryLock() {
			// A link's receive (this call's, or the poller's meanwhile)
			// stopped at a message, after applying what came before it,
			// whose completions would go out first.
			msgs = q.pollMessagesLocked(h, max)
			c.progMu.Unlock()
			if msgs > 0 {
				return msgs, 0, nil
			}
		}
	}
	return 0, q.pop(wc), nil
}

// testBeforeRound, set by a test, runs in PollRound between its look for
// messages and its progress round.
var testBeforeRound func()

// testAfterMessages, set by a test, runs in pollMessagesLocked after its look
// at the queue pairs and links.
var testAfterMessages func()

// pollMessagesLocked is PollMessages with the progress lock held.
func (q *cq) pollMessagesLocked(h verbs.MessageHandler, max int) int {
	c := q.ctx
	n := 0
	more := true
	// Round robin: a call that ends early (max reached, or the handler asked)
	// makes the next one begin with the queue pair after the one it ended at,
	// so a connection that always has max messages waiting does not keep the
	// others' messages waiting behind it.
	// The queue pairs joined over TCP come after the others.
	qps := *c.active.Load()
	var links []*tcpLink
	if ls := c.links.Load(); ls != nil {
		links = *ls
	}
	total := len(qps) + len(links)
	start := q.msgNext
	if start >= total {
		start = 0
	}
	busy := false
	for i := 0; i < total; i++ {
		j := start + i
		if j >= total {
			j -= total
		}
		var k int
		var stop bool
		if j < len(qps) {
			p := qps[j]
			if p.rcq != q || !p.msgOn.Load() {
				continue
			}
			k, stop = p.pollMessages(h, max-n)
		} else {
			l := links[j-len(qps)]
			if l.q.rcq != q || !l.q.msgOn.Load() {
				continue
			}
			var b bool
			k, stop, b = l.pollMessages(h, max-n)
			busy = busy || b
		}
		n += k
		if stop || n >= max {
			more = !stop
			q.msgNext = j + 1
			break
		}
	}
	if testAfterMessages != nil {
		testAfterMessages()
	}
	if more && !busy && (n == 0 || len(links) > 0) && q.msgReady.Load() {
		// Nothing was left (n == 0: set again by the drain that next stops
		// at a message), or every link's held messages were handed out: left
		// as it was, Wait would return at once for nothing. A link's receive
		// that holds one meanwhile (the poller's: after the look above, too)
		// sets it again after this, or is seen below.
		q.msgReady.Store(false)
		for _, l := range links {
			if l.q.rcq == q && l.msgHeld.Load() {
				q.msgReady.Store(true)
				break
			}
		}
	}
	return n
}

// pollMessages hands out the queue pair's messages, up to max, and reports how
// many and whether the handler asked to stop. Called with the context's progress
// lock held (which keeps the rings mapped and is what the consumer state needs),
// without q.mu: the handler may post to this queue pair.
func (q *qp) pollMessages(h verbs.MessageHandler, max int) (n int, stop bool) {
	var m msg
	for n < max && q.State() == verbs.QPReady && q.in != nil && q.in.ready() {
		q.in.peek(&m)
		if !q.isMessage(&m) {
			break // drain takes it (and stops at the next message)
		}
		b := q.in.messageBytes(uint32(m.status), m.len, q.msgBuf)
		more := h(q.msgTag, b)
		q.in.consume(m.len)
		n++
		if !more {
			stop = true
			break
		}
	}
	if !stop && n < max && q.msgWait.Load() {
		q.msgWait.Store(false) // no message waits now (a drain sets it again)
	}
	if n > 0 && q.in != nil {
		if w := q.in.wantWord(); atomic.LoadUint32(w) != 0 {
			atomic.StoreUint32(w, 0)
			if q.peer != nil {
				wakePeer(q.peer)
			}
		}
	}
	return n, stop
}

// SendMessage sends msg as one unsignaled single-fragment SEND straight into the
// ring, without a send queue entry (see verbs.MessageSender).
func (q *qp) SendMessage(b []byte) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	switch q.State() {
	case verbs.QPReady:
	case verbs.QPClosed:
		return verbs.Errorf("send_message", verbs.ErrClosed, nil)
	case verbs.QPInit:
		return verbs.Errorf("send_message", verbs.ErrQPState, nil)
	default:
		// The error state: a work request completes flushed, so the caller
		// learns of the failure from it.
		return verbs.ErrNoResources
	}
	if q.link != nil {
		return q.link.sendMessage(b)
	}
	if len(b) > maxInline || q.sqIss != q.sqTail || len(q.pend) > 0 || q.out == nil ||
		q.peerDead || atomic.LoadUint32(q.in.closedWord()) != 0 || !q.room(len(b)-min(len(b), hdrInline)) {
		return verbs.ErrNoResources
	}
	q.out.pushMessage(b)
	wakePeer(q.peer)
	return nil
}
