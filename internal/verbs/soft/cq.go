package soft

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/goportals/goportals/internal/verbs"
)

// cq is a completion queue: a growable ring of completions in process memory. Poll
// drives the context's progress; Wait spins briefly with progress, then sleeps until
// the progress goroutine posts a completion.
type cq struct {
	ctx     *Context
	mu      sync.Mutex
	buf     []verbs.WorkCompletion
	head    int
	count   atomic.Int32
	waiters atomic.Int32
	wake    chan struct{} // closed and replaced to wake every waiter (guarded by mu)
	refs    atomic.Int32
	closed  atomic.Bool
	done    chan struct{}
}

// CreateCQ creates a completion queue.
func (c *Context) CreateCQ(entries int) (verbs.CQ, error) {
	if entries <= 0 || entries > maxCQE {
		return nil, verbs.Errorf("create_cq", verbs.ErrInvalidArgument, nil)
	}
	if c.closed.Load() {
		return nil, verbs.Errorf("create_cq", verbs.ErrClosed, nil)
	}
	q := &cq{ctx: c, buf: make([]verbs.WorkCompletion, entries), wake: make(chan struct{}),
		done: make(chan struct{})}
	c.mu.Lock()
	c.cqs[q] = struct{}{}
	c.mu.Unlock()
	return q, nil
}

// push appends a completion; the queue grows rather than lose one.
func (q *cq) push(wc verbs.WorkCompletion) {
	q.mu.Lock()
	n := int(q.count.Load())
	if n == len(q.buf) {
		nb := make([]verbs.WorkCompletion, 2*len(q.buf))
		for i := 0; i < n; i++ {
			nb[i] = q.buf[(q.head+i)%len(q.buf)]
		}
		q.buf, q.head = nb, 0
	}
	q.buf[(q.head+n)%len(q.buf)] = wc
	q.count.Add(1)
	if q.waiters.Load() > 0 {
		close(q.wake)
		q.wake = make(chan struct{})
	}
	q.mu.Unlock()
}

// Poll drives progress and moves ready completions into wc.
func (q *cq) Poll(wc []verbs.WorkCompletion) (int, error) {
	if q.closed.Load() {
		return 0, verbs.Errorf("poll_cq", verbs.ErrClosed, nil)
	}
	q.ctx.markPolled()
	q.ctx.progress()
	if q.count.Load() == 0 || len(wc) == 0 {
		return 0, nil
	}
	q.mu.Lock()
	n := min(int(q.count.Load()), len(wc))
	for i := 0; i < n; i++ {
		wc[i] = q.buf[q.head]
		q.head = (q.head + 1) % len(q.buf)
	}
	q.count.Add(int32(-n))
	q.mu.Unlock()
	return n, nil
}

// waitSpin is how many progress rounds Wait runs before it sleeps.
const waitSpin = 4096

// Wait blocks until a completion is ready, ctx ends or the queue closes.
func (q *cq) Wait(ctx context.Context) error {
	for i := 0; i < waitSpin; i++ {
		if q.closed.Load() {
			return verbs.Errorf("wait_cq", verbs.ErrClosed, nil)
		}
		if q.count.Load() > 0 {
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
		if q.count.Load() > 0 {
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
