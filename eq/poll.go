package eq

import "context"

// Poll removes and returns the oldest event of the first queue in qs that holds one,
// with that queue's index, blocking until one of them receives an event (PtlEQPoll).
// Queues are examined in slice order, so a caller that wants round-robin fairness
// rotates the slice between calls.
//
// The error is nil or ErrEQDropped with a valid event (as for [Queue.Get]);
// ErrInterrupted with the index of a queue freed while Poll waited; ErrFreed with the
// index of a queue freed before the call; ErrEQEmpty joined with ctx.Err() and index -1
// when ctx ends first (an already expired ctx makes Poll a non-blocking check); an
// ErrInvalid error for an empty slice or a nil queue. When an event is ready Poll does
// not allocate.
func Poll(ctx context.Context, qs []*Queue) (Event, int, error) {
	return pollQueues(ctx, qs)
}

func pollQueues(ctx context.Context, qs []*Queue) (Event, int, error) {
	if len(qs) == 0 {
		return Event{}, -1, errNoQueues
	}
	for i, q := range qs {
		if q == nil {
			return Event{}, i, errNilQueue
		}
	}
	for i, q := range qs {
		if q.busy.Load() == 0 {
			continue
		}
		if ev, err := q.Get(); err != ErrEQEmpty {
			return ev, i, err
		}
	}
	w := getWaiter()
	defer putWaiter(w)
	for {
		if err := ctx.Err(); err != nil {
			return Event{}, -1, waitEnded(ErrEQEmpty, err)
		}
		// Check each queue again and register under its lock, so a post that lands
		// after the check finds the waiter.
		for i, q := range qs {
			q.mu.Lock()
			ev, err := q.getLocked()
			if err != ErrEQEmpty {
				q.mu.Unlock()
				unregisterQueues(qs[:i], w)
				if err == ErrFreed {
					err = ErrInterrupted
				}
				return ev, i, err
			}
			q.waiters.add(w)
			q.mu.Unlock()
		}
		select {
		case <-w.ch:
		case <-ctx.Done():
		}
		unregisterQueues(qs, w)
	}
}

func unregisterQueues(qs []*Queue, w *waiter) {
	for _, q := range qs {
		q.mu.Lock()
		q.waiters.remove(w)
		q.mu.Unlock()
	}
}

// PollCounters returns the value of the first counter cs[i] that satisfies its test
// (success >= tests[i] or failure != 0, as PtlCTPoll), with its index, blocking until one
// does.
//
// The error is nil on success; ErrInterrupted with the index of a counter freed while
// PollCounters waited; ErrFreed with the index of a counter freed before the call;
// ErrCTNoneReached joined with ctx.Err() and index -1 when ctx ends first (an already
// expired ctx makes it a non-blocking check); an ErrInvalid error for empty or unequal
// slices or a nil counter. When a test is already satisfied it does not allocate.
func PollCounters(ctx context.Context, cs []*Counter, tests []uint64) (CTEvent, int, error) {
	return pollCounters(ctx, cs, tests)
}

func pollCounters(ctx context.Context, cs []*Counter, tests []uint64) (CTEvent, int, error) {
	if len(cs) == 0 {
		return CTEvent{}, -1, errNoCounters
	}
	if len(cs) != len(tests) {
		return CTEvent{}, -1, errTestsLen
	}
	for i, c := range cs {
		if c == nil {
			return CTEvent{}, i, errNilCounter
		}
	}
	for i, c := range cs {
		c.mu.Lock()
		v, freed := c.value(), c.freed
		c.mu.Unlock()
		if freed {
			return CTEvent{}, i, ErrFreed
		}
		if reached(v, tests[i]) {
			return v, i, nil
		}
	}
	w := getWaiter()
	defer putWaiter(w)
	for {
		if err := ctx.Err(); err != nil {
			return CTEvent{}, -1, waitEnded(ErrCTNoneReached, err)
		}
		for i, c := range cs {
			c.mu.Lock()
			if c.freed {
				c.mu.Unlock()
				unregisterCounters(cs[:i], w)
				return CTEvent{}, i, ErrInterrupted
			}
			// Registered before the value is read: an outside add (Cell.Add) that
			// this read misses sees the attention word and is noticed.
			c.addWaiterLocked(w, tests[i])
			if v := c.value(); reached(v, tests[i]) {
				c.removeWaiterLocked(w)
				c.mu.Unlock()
				unregisterCounters(cs[:i], w)
				return v, i, nil
			}
			c.mu.Unlock()
		}
		select {
		case <-w.ch:
		case <-ctx.Done():
		}
		unregisterCounters(cs, w)
	}
}

func unregisterCounters(cs []*Counter, w *waiter) {
	for _, c := range cs {
		c.mu.Lock()
		c.removeWaiterLocked(w)
		c.mu.Unlock()
	}
}

// reached is the PtlCTWait/PtlCTPoll condition of the Portals reference.
func reached(v CTEvent, test uint64) bool {
	return v.Success >= test || v.Failure != 0
}
