package soft

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/goportals/goportals/internal/verbs"
)

// cq is a completion queue. Completions go into a bounded ring of slots, each
// with a sequence word (a multi-producer, multi-consumer queue in the style of
// Vyukov's): a push claims a position with one compare-and-swap on pushPos and
// publishes the slot with a store, a poll claims with one on pollPos; neither takes
// a lock. A push that finds the ring full appends to an overflow list under mu
// instead (the queue grows rather than lose a completion), and every push after it
// goes there too until a poll emptied it, so completions of one queue pair stay in
// order. Poll drives the context's progress; Wait spins briefly with progress,
// then sleeps until a push wakes it.
type cq struct {
	ctx     *Context
	slots   []cqSlot
	mask    uint64
	pushPos atomic.Uint64 // next position a push claims
	pollPos atomic.Uint64 // next position a poll claims

	mu      sync.Mutex
	over    []verbs.WorkCompletion // completions that found the ring full (guarded by mu)
	overAt  int                    // over[:overAt] were polled already (guarded by mu)
	nover   atomic.Int32           // len(over) - overAt, stored under mu
	waiters atomic.Int32
	wake    chan struct{} // closed and replaced to wake every waiter (guarded by mu)
	refs    atomic.Int32
	closed  atomic.Bool
	// msgReady is set by a drain that stopped at a message for PollMessages and
	// cleared by a PollMessages that found none: Wait returns while it is set.
	msgReady atomic.Bool
	// msgNext is the index in the context's active queue pairs at which the next
	// PollMessages begins (under the context's progress lock).
	msgNext int
	done    chan struct{}
}

// cqSlot is one ring position: seq is pos when the slot is free for the push at
// pos, pos+1 once that push published wc, and pos+len(slots) once the poll of pos
// took it.
type cqSlot struct {
	seq atomic.Uint64
	wc  verbs.WorkCompletion
}

// CreateCQ creates a completion queue.
func (c *Context) CreateCQ(entries int) (verbs.CQ, error) {
	if entries <= 0 || entries > maxCQE {
		return nil, verbs.Errorf("create_cq", verbs.ErrInvalidArgument, nil)
	}
	if c.closed.Load() {
		return nil, verbs.Errorf("create_cq", verbs.ErrClosed, nil)
	}
	n := 1
	for n < entries {
		n <<= 1
	}
	q := &cq{ctx: c, slots: make([]cqSlot, n), mask: uint64(n - 1), wake: make(chan struct{}),
		done: make(chan struct{})}
	for i := range q.slots {
		q.slots[i].seq.Store(uint64(i))
	}
	c.mu.Lock()
	c.cqs[q] = struct{}{}
	c.mu.Unlock()
	return q, nil
}

// push appends a completion; the queue grows rather than lose one.
func (q *cq) push(wc verbs.WorkCompletion) {
	if q.nover.Load() != 0 || !q.tryPush(&wc) {
		q.mu.Lock()
		if q.nover.Load() != 0 || !q.tryPush(&wc) {
			q.over = append(q.over, wc)
			q.nover.Store(int32(len(q.over) - q.overAt))
		}
		q.mu.Unlock()
	}
	if q.waiters.Load() > 0 {
		q.mu.Lock()
		close(q.wake)
		q.wake = make(chan struct{})
		q.mu.Unlock()
	}
}

// tryPush puts wc in the ring, or reports false when the ring is full.
func (q *cq) tryPush(wc *verbs.WorkCompletion) bool {
	for {
		pos := q.pushPos.Load()
		s := &q.slots[pos&q.mask]
		switch seq := s.seq.Load(); {
		case seq == pos:
			if q.pushPos.CompareAndSwap(pos, pos+1) {
				s.wc = *wc
				s.seq.Store(pos + 1)
				return true
			}
		case seq < pos:
			return false // the slot still holds the completion of pos-len(slots)
		}
		// another push claimed pos first: look again
	}
}

// tryPop takes the oldest completion of the ring into wc, or reports false when
// none is published.
func (q *cq) tryPop(wc *verbs.WorkCompletion) bool {
	for {
		pos := q.pollPos.Load()
		s := &q.slots[pos&q.mask]
		switch seq := s.seq.Load(); {
		case seq == pos+1:
			if q.pollPos.CompareAndSwap(pos, pos+1) {
				*wc = s.wc
				s.seq.Store(pos + uint64(len(q.slots)))
				return true
			}
		case seq <= pos:
			return false // empty (or the push that claimed pos has not published yet)
		}
	}
}

// ready reports whether a completion can be polled (or messages, see msgReady).
func (q *cq) ready() bool {
	pos := q.pollPos.Load()
	return q.slots[pos&q.mask].seq.Load() == pos+1 || q.nover.Load() != 0 || q.msgReady.Load()
}

// hasCompletion reports whether a completion can be polled (ready without the
// messages).
func (q *cq) hasCompletion() bool {
	pos := q.pollPos.Load()
	return q.slots[pos&q.mask].seq.Load() == pos+1 || q.nover.Load() != 0
}

// noteMessage records that a message waits for PollMessages and wakes Wait.
func (q *cq) noteMessage() {
	if !q.msgReady.Load() {
		q.msgReady.Store(true)
	}
	if q.waiters.Load() > 0 {
		q.mu.Lock()
		close(q.wake)
		q.wake = make(chan struct{})
		q.mu.Unlock()
	}
}

// Poll drives progress and moves ready completions into wc.
func (q *cq) Poll(wc []verbs.WorkCompletion) (int, error) {
	if q.closed.Load() {
		return 0, verbs.Errorf("poll_cq", verbs.ErrClosed, nil)
	}
	q.ctx.markPolled()
	if countProgLocks {
		progLocks.Add(1)
	}
	q.ctx.progress()
	return q.pop(wc), nil
}

// countRounds, set by the package's tests, makes pollLinksAfter count the
// context's rounds over its links (tcpState.rounds), whoever runs them: the
// callers, and the context's progress goroutine between its naps.
var countRounds atomic.Bool

// countProgLocks, set by the package's tests, makes the polls count in progLocks
// the times they try the context's progress lock.
var countProgLocks bool

var progLocks atomic.Uint64

// progressRound is the round of Context.progress over the connected queue pairs,
// for a caller that holds the progress lock already (PollRound of mq). It marks
// the round in flight (inRound) only when a queue pair has work: a round that
// touches no queue pair uses no region, and the two stores cost more than the
// look. A queue pair of mq whose only work is a message at the head of its ring is
// left alone (its drain would stop there at once): msgs says there is one, for
// PollRound to hand out.
func (c *Context) progressRound(mq *cq) (n int, msgs bool) {
	marked := false
	for _, q := range *c.active.Load() {
		if q.hasWork() {
			if q.messageAtHead(mq) {
				msgs = true
				continue
			}
			if !marked {
				c.inRound.Store(true)
				marked = true
			}
			n += q.progress()
		}
	}
	if marked {
		c.inRound.Store(false)
	}
	return n, msgs
}

// pollLinks is the part of Context.progress that runs without the progress lock:
// the TCP connections.
func (c *Context) pollLinks() int { return c.pollLinksAfter(0) }

// pollLinksAfter is pollLinks in a round that handled done events before it:
// the round pauses (see tcpHotPause) only when it handled none at all.
func (c *Context) pollLinksAfter(done int) int {
	if countRounds.Load() {
		c.tcp.rounds.Add(1)
	}
	n, emptyHot, idle := 0, false, false
	if ls := c.links.Load(); ls != nil {
		for _, l := range *ls {
			k, e, i := l.round()
			n += k
			emptyHot = emptyHot || e
			idle = idle || i
		}
	}
	if idle {
		n += c.lookIdle() // the idle links, all at once
	}
	if emptyHot && n+done == 0 {
		// A hot link's socket was read and found empty: the next read of
		// it waits a little (see tcpHotPause).
		if d := tcpHotPause; d > 0 {
			c.tcp.hotPauses.Add(1)
			hotPause(d)
		}
	}
	return n
}

// pop moves ready completions into wc.
func (q *cq) pop(wc []verbs.WorkCompletion) int {
	n := 0
	for n < len(wc) && q.tryPop(&wc[n]) {
		n++
	}
	if n < len(wc) && q.nover.Load() != 0 {
		// The ring is drained (as far as this poll saw it): the overflow is next.
		// Under mu no push can add to the ring while the overflow is not empty, so
		// what the ring holds now is older than the overflow: take it first.
		q.mu.Lock()
		for n < len(wc) && q.tryPop(&wc[n]) {
			n++
		}
		if n < len(wc) && q.pollPos.Load() != q.pushPos.Load() {
			// A push claimed the oldest ring slot and has not published it yet:
			// that slot, and the ring behind it, are older than the overflow
			// (another producer's later completions may be there). Take the
			// overflow only after them, at a later poll.
			q.mu.Unlock()
			return n
		}
		k := copy(wc[n:], q.over[q.overAt:])
		n += k
		q.overAt += k
		switch {
		case q.overAt == len(q.over):
			clear(q.over)
			q.over, q.overAt = q.over[:0], 0
		case q.overAt >= len(q.over)/2:
			// Compact once half is polled: each entry moves O(1) times on
			// average (a copy per poll made emptying a long overflow quadratic).
			rest := copy(q.over, q.over[q.overAt:])
			clear(q.over[rest:])
			q.over, q.overAt = q.over[:rest], 0
		}
		q.nover.Store(int32(len(q.over) - q.overAt))
		q.mu.Unlock()
	}
	return n
}

// waitSpin is how many progress rounds Wait runs before it sleeps.
const waitSpin = 4096

// Wait blocks until a completion is ready, ctx ends or the queue closes.
func (q *cq) Wait(ctx context.Context) error {
	for i := 0; i < waitSpin; i++ {
		if q.closed.Load() {
			return verbs.Errorf("wait_cq", verbs.ErrClosed, nil)
		}
		if q.ready() {
			return nil
		}
		q.ctx.markPolled()
		q.ctx.progress()
		if i&63 == 63 {
			runtime.Gosched() // a preempted goroutine may hold the progress lock
		} else {
			cpuPause()
		}
	}
	q.waiters.Add(1)
	defer q.waiters.Add(-1)
	for {
		q.mu.Lock()
		wake := q.wake
		q.mu.Unlock()
		if q.ready() {
			return nil
		}
		q.ctx.kick()
		select {
		case <-wake:
		case <-ctx.Done():
			return ctx.Err()
		case <-q.done:
			return verbs.Errorf("wait_cq", verbs.ErrClosed, nil)
		}
	}
}

// Close destroys the queue.
func (q *cq) Close() error {
	if q.refs.Load() > 0 {
		return verbs.Errorf("destroy_cq", verbs.ErrBusy, nil)
	}
	if !q.closed.CompareAndSwap(false, true) {
		return verbs.Errorf("destroy_cq", verbs.ErrClosed, nil)
	}
	close(q.done)
	q.ctx.mu.Lock()
	delete(q.ctx.cqs, q)
	q.ctx.mu.Unlock()
	return nil
}
