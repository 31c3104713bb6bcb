package eq

import (
	"context"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
)

// CTEvent is the value of a counting event (ptl_ct_event_t): operations that succeeded
// (or bytes, for byte-counting entries) and operations that failed.
type CTEvent struct {
	Success uint64
	Failure uint64
}

// total is success+failure, saturated at the largest uint64 so a trigger compare never
// wraps.
func (v CTEvent) total() uint64 {
	s := v.Success + v.Failure
	if s < v.Success {
		return math.MaxUint64
	}
	return s
}

// Counter is a counting event (PtlCTAlloc) with its list of triggered operations.
//
// All methods are safe for concurrent use (see the package comment). Get, Set and Inc do
// not allocate; AddTrigger allocates only when the pending list grows.
type Counter struct {
	mu      sync.Mutex
	ev      CTEvent
	freed   bool
	firing  bool   // a goroutine is running this counter's ready triggers
	seq     uint64 // registrations so far: the tie-break of equal thresholds
	trig    trigHeap
	waiters waiterSet
	// snapshot of ev for Reached, written under mu after every change
	snapOK, snapFail atomic.Uint64
}

// NewCounter allocates a counting event with success and failure zero.
func NewCounter() *Counter { return &Counter{} }

// Reached reports, without locking, whether the counter meets a Wait for test
// (success >= test or any failure). It reads a snapshot that may trail a
// concurrent Set, so a caller acts on it only after confirming with Get: it is
// the cheap check of a polling loop.
func (c *Counter) Reached(test uint64) bool {
	return c.snapOK.Load() >= test || c.snapFail.Load() > 0
}

// Get returns the current value (PtlCTGet), or ErrFreed.
func (c *Counter) Get() (CTEvent, error) {
	c.mu.Lock()
	v, freed := c.ev, c.freed
	c.mu.Unlock()
	if freed {
		return CTEvent{}, ErrFreed
	}
	return v, nil
}

// Set replaces the value (PtlCTSet), wakes waiters and fires every trigger whose
// threshold the new success+failure reaches, in threshold order. Lowering the value
// fires nothing and leaves pending triggers pending. It returns ErrFreed after Free.
func (c *Counter) Set(v CTEvent) error {
	c.mu.Lock()
	if c.freed {
		c.mu.Unlock()
		return ErrFreed
	}
	c.ev = v
	c.snapOK.Store(v.Success)
	c.snapFail.Store(v.Failure)
	c.waiters.wakeAll()
	c.runTriggersLocked()
	return nil
}

// Inc adds d to the value (PtlCTInc), wakes waiters and fires every trigger whose
// threshold the new success+failure reaches, in threshold order. As in Portals, d may
// not have both fields non-zero (an ErrInvalid error). An increment that would wrap a
// field returns ErrCounterOverflow and changes nothing. It returns ErrFreed after Free.
func (c *Counter) Inc(d CTEvent) error {
	if d.Success != 0 && d.Failure != 0 {
		return errIncBoth
	}
	c.mu.Lock()
	if c.freed {
		c.mu.Unlock()
		return ErrFreed
	}
	s, f := c.ev.Success+d.Success, c.ev.Failure+d.Failure
	if s < c.ev.Success || f < c.ev.Failure {
		c.mu.Unlock()
		return ErrCounterOverflow
	}
	c.ev = CTEvent{Success: s, Failure: f}
	c.snapOK.Store(s)
	c.snapFail.Store(f)
	c.waiters.wakeAll()
	c.runTriggersLocked()
	return nil
}

// Wait blocks until success >= test or failure != 0 (PtlCTWait) and returns the value
// that satisfied it. It returns ErrInterrupted if the counter is freed while it waits,
// ErrFreed if it was freed before, and ErrCTNoneReached joined with ctx.Err() when ctx
// ends first. It does not allocate when the test is already satisfied.
func (c *Counter) Wait(ctx context.Context, test uint64) (CTEvent, error) {
	cs := [1]*Counter{c}
	ts := [1]uint64{test}
	v, _, err := pollCounters(ctx, cs[:], ts[:])
	return v, err
}

// AddTrigger registers t to fire once success+failure reaches threshold. Triggers fire
// in threshold order, ties in registration order. If the threshold is already reached t
// fires before AddTrigger returns (or, when called from inside a trigger of the same
// counter, right after that trigger returns). It returns ErrFreed after Free and an
// ErrInvalid error for a nil trigger; t is then not kept.
func (c *Counter) AddTrigger(threshold uint64, t Trigger) error {
	if t == nil {
		return errNilTrigger
	}
	c.mu.Lock()
	if c.freed {
		c.mu.Unlock()
		return ErrFreed
	}
	c.seq++
	c.trig.add(trigEntry{threshold: threshold, seq: c.seq, t: t})
	c.runTriggersLocked()
	return nil
}

// PendingTriggers returns the number of triggers registered and not yet fired or
// cancelled.
func (c *Counter) PendingTriggers() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.trig)
}

// CancelTriggered drops every pending trigger without firing it (PtlCTCancelTriggered)
// and returns how many it dropped. Triggers that implement Canceler have Cancel called,
// in threshold order, before CancelTriggered returns. The counter's value is unchanged
// and new triggers may be added afterwards. It returns ErrFreed after Free.
func (c *Counter) CancelTriggered() (int, error) {
	c.mu.Lock()
	if c.freed {
		c.mu.Unlock()
		return 0, ErrFreed
	}
	pending := c.trig.drain()
	c.mu.Unlock()
	cancelAll(pending)
	return len(pending), nil
}

// Free releases the counter (PtlCTFree): waiters return ErrInterrupted, pending
// triggers are dropped as by CancelTriggered, and later calls return ErrFreed. Freeing
// twice returns ErrFreed.
func (c *Counter) Free() error {
	c.mu.Lock()
	if c.freed {
		c.mu.Unlock()
		return ErrFreed
	}
	c.freed = true
	pending := c.trig.drain()
	c.waiters.wakeAll()
	c.mu.Unlock()
	cancelAll(pending)
	return nil
}

// readyLocked reports whether the lowest pending trigger may fire.
func (c *Counter) readyLocked() bool {
	return !c.freed && len(c.trig) > 0 && c.trig[0].threshold <= c.ev.total()
}

// runTriggersLocked is called with c.mu held and releases it. Unless another call is
// already running this counter's triggers, it fires ready triggers one at a time, lowest
// threshold first, without holding the lock, and checks again after each: a trigger that
// updates this counter only changes the value and the running loop picks up what became
// ready. Nested calls on other counters run their own loops, so the depth is bounded by
// the number of distinct counters in a chain.
func (c *Counter) runTriggersLocked() {
	if c.firing || !c.readyLocked() {
		c.mu.Unlock()
		return
	}
	c.firing = true
	for {
		e := c.trig.popMin()
		c.mu.Unlock()
		c.fire(e.t)
		c.mu.Lock()
		if !c.readyLocked() {
			break
		}
	}
	c.stopFiringLocked()
	c.mu.Unlock()
}

// stopFiringLocked ends a firing loop. Called with c.mu held.
func (c *Counter) stopFiringLocked() { c.firing = false }

// Settle returns once no goroutine is running this counter's triggers. An update
// that finds another goroutine firing leaves its newly ready triggers to that
// goroutine's loop; a caller that must know they have fired (for example to issue
// the operations they released before returning) calls Settle after the update. It
// must not be called from a Trigger's Fire on the same counter.
// A firing loop only runs Fire methods, so the wait is short: Settle yields the
// processor until it ends, and allocates nothing.
func (c *Counter) Settle() {
	for {
		c.mu.Lock()
		firing := c.firing
		c.mu.Unlock()
		if !firing {
			return
		}
		runtime.Gosched()
	}
}

// fire runs one trigger. If it panics the loop is abandoned: fire clears c.firing so
// later updates fire the remaining triggers, and the panic goes on to the caller.
func (c *Counter) fire(t Trigger) {
	done := false
	defer func() {
		if !done {
			c.mu.Lock()
			c.stopFiringLocked()
			c.mu.Unlock()
		}
	}()
	t.Fire()
	done = true
}
