package loopback

import (
	"context"
	"sync"

	"github.com/goportals/goportals/internal/verbs"
)

// cqEntry is one queued completion plus what Poll needs to free queue slots.
type cqEntry struct {
	wc   verbs.WorkCompletion
	qp   *qp
	seq  uint64 // send sequence number (send completions)
	send bool
}

// cq is a bounded completion queue. ring, head, n, overrun and closed are guarded by mu;
// qps (the attached queue pairs) by wire.mu.
type cq struct {
	ctx *devContext

	mu      sync.Mutex
	ring    []cqEntry
	head, n int
	overrun bool
	closed  bool

	notify chan struct{} // capacity 1: a completion arrived
	done   chan struct{} // closed when the queue is destroyed

	qps      []*qp // queue pairs using the queue (wire.mu)
	handling bool  // overrun handling in progress (wire.mu)
}

func newCQ(c *devContext, entries int) *cq {
	return &cq{
		ctx:    c,
		ring:   make([]cqEntry, entries),
		notify: make(chan struct{}, 1),
		done:   make(chan struct{}),
	}
}

// Poll moves up to len(wc) completions into wc. It never blocks and allocates nothing.
// Polled send completions free the send-queue slots of their request and of the
// unsignaled requests before it; polled receive completions free receive-queue slots.
func (q *cq) Poll(wc []verbs.WorkCompletion) (int, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return 0, verbs.Errorf("poll cq", verbs.ErrClosed, nil)
	}
	k := 0
	for k < len(wc) && q.n > 0 {
		e := &q.ring[q.head]
		wc[k] = e.wc
		if e.send {
			e.qp.sqRetired.Store(e.seq + 1)
		} else {
			e.qp.rqRetired.Add(1)
		}
		e.qp = nil
		q.head++
		if q.head == len(q.ring) {
			q.head = 0
		}
		q.n--
		k++
	}
	if k == 0 && q.overrun {
		return 0, verbs.Errorf("poll cq", verbs.ErrNoResources, errCQOverrun)
	}
	return k, nil
}

// Wait blocks until a completion is ready, ctx ends or the queue is closed.
func (q *cq) Wait(ctx context.Context) error {
	for {
		q.mu.Lock()
		n, closed, overrun := q.n, q.closed, q.overrun
		q.mu.Unlock()
		switch {
		case closed:
			return verbs.Errorf("wait cq", verbs.ErrClosed, nil)
		case n > 0:
			q.wake() // let other waiters look too
			return nil
		case overrun:
			return verbs.Errorf("wait cq", verbs.ErrNoResources, errCQOverrun)
		}
		select {
		case <-q.notify:
		case <-q.done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Close destroys the queue; ErrBusy while queue pairs use it.
func (q *cq) Close() error {
	wire.mu.Lock()
	defer wire.mu.Unlock()
	if q.isClosed() {
		return verbs.Errorf("close cq", verbs.ErrClosed, nil)
	}
	if len(q.qps) > 0 {
		return verbs.Errorf("close cq", verbs.ErrBusy, nil)
	}
	q.shut()
	delete(q.ctx.cqs, q)
	return nil
}

// shut marks the queue closed and wakes its waiters. Called with wire.mu held.
func (q *cq) shut() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return
	}
	q.closed = true
	for i := range q.ring {
		q.ring[i].qp = nil
	}
	close(q.done)
}

func (q *cq) isClosed() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.closed
}

func (q *cq) wake() {
	select {
	case q.notify <- struct{}{}:
	default:
	}
}

// attach and detach track the queue pairs using the queue. Called with wire.mu held.
func (q *cq) attach(p *qp) { q.qps = append(q.qps, p) }

func (q *cq) detach(p *qp) {
	for i, x := range q.qps {
		if x == p {
			q.qps = append(q.qps[:i], q.qps[i+1:]...)
			return
		}
	}
}

// push queues a completion. When the queue is full the completion is lost, the queue
// is marked overrun and every queue pair using it enters the error state, as a CQ
// overrun does in ibverbs. Called with wire.mu held.
func (q *cq) push(e cqEntry) {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return
	}
	if q.n == len(q.ring) {
		q.overrun = true
		q.mu.Unlock()
		q.wake()
		q.failUsers()
		return
	}
	i := q.head + q.n
	if i >= len(q.ring) {
		i -= len(q.ring)
	}
	q.ring[i] = e
	q.n++
	q.mu.Unlock()
	q.wake()
}

// failUsers moves every attached queue pair to the error state after an overrun.
func (q *cq) failUsers() {
	if q.handling {
		return
	}
	q.handling = true
	for _, p := range q.qps {
		p.fail()
	}
}
