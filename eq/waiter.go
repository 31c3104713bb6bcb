package eq

import "sync"

// waiter is one blocked caller. Queues keep the waiters registered on them and wake
// them all on every change; counters wake those whose test the change met (all of
// them on Free). A waiter registered on several objects (Poll) is woken by whichever
// meets it first. The channel holds at most one pending wake-up, so a wake never
// blocks the waker and repeated wakes coalesce.
type waiter struct {
	ch chan struct{}
}

var waiterPool = sync.Pool{New: func() any { return &waiter{ch: make(chan struct{}, 1)} }}

func getWaiter() *waiter { return waiterPool.Get().(*waiter) }

// putWaiter returns w to the pool with no pending wake-up. The caller must have
// unregistered w from every object first.
func putWaiter(w *waiter) {
	select {
	case <-w.ch:
	default:
	}
	waiterPool.Put(w)
}

func (w *waiter) wake() {
	select {
	case w.ch <- struct{}{}:
	default:
	}
}

// waiterSet is the list of waiters of one object, guarded by that object's mutex.
type waiterSet []*waiter

func (s *waiterSet) add(w *waiter) { *s = append(*s, w) }

func (s *waiterSet) remove(w *waiter) {
	l := *s
	for i, x := range l {
		if x == w {
			last := len(l) - 1
			l[i] = l[last]
			l[last] = nil
			*s = l[:last]
			return
		}
	}
}

func (s waiterSet) wakeAll() {
	for _, w := range s {
		w.wake()
	}
}

// counterWaiter is a waiter registered on a counter with the test it waits for.
type counterWaiter struct {
	w    *waiter
	test uint64
}

// counterWaiters is the list of waiters of one counter, guarded by its mutex.
type counterWaiters []counterWaiter

func (s *counterWaiters) add(w *waiter, test uint64) { *s = append(*s, counterWaiter{w, test}) }

func (s *counterWaiters) remove(w *waiter) {
	l := *s
	for i, x := range l {
		if x.w == w {
			last := len(l) - 1
			l[i] = l[last]
			l[last] = counterWaiter{}
			*s = l[:last]
			return
		}
	}
}

func (s counterWaiters) wakeAll() {
	for _, x := range s {
		x.w.wake()
	}
}

// wakeReached wakes the waiters whose test v meets: an add that leaves a wait
// unmet wakes nobody (the waiter would only look and sleep again, a goroutine
// hand-off per add).
func (s counterWaiters) wakeReached(v CTEvent) {
	for _, x := range s {
		if reached(v, x.test) {
			x.w.wake()
		}
	}
}
