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

// Cell is where a counter's value lives: the success and failure words, each loaded
// and stored atomically, followed by the attention word. Its first 16 bytes have the
// layout of ptl_ct_event_t (success, then failure, 64 bits each, native order), so code
// that cannot call in — C code given the address, another process that maps the same
// memory — reads a value with two loads.
//
// A writer without the counter's lock may add to a Cell (Cell.Add): that is how a peer
// that maps the memory counts an operation it carried out itself. Such an add changes
// the value but wakes nobody and fires no trigger; Add reports whether the counter
// needs to hear of it (waiters or pending triggers), and then the counter's owner must
// call Counter.Notice.
type Cell struct {
	success atomic.Uint64
	failure atomic.Uint64
	// attention is 1 while the counter has waiters or pending triggers (written under
	// the counter's lock, before the value is checked, so an Add that misses it
	// happened before that check).
	attention atomic.Uint32
	_         [CellSize - 20]byte
}

// CellSize is the size of a Cell in bytes: one cache line, so that cells placed side
// by side do not share one.
const CellSize = 64

// Load returns the value held in the cell. The two words are read one after the other:
// a concurrent update may show between them (as with PtlCTGet in hardware).
func (c *Cell) Load() CTEvent {
	v := CTEvent{Success: c.success.Load(), Failure: c.failure.Load()}
	raceAcquire()
	return v
}

// Add adds d to the cell's value without the counter's lock and reports whether the
// counter must be told (Counter.Notice): it has waiters or pending triggers. A field
// that would wrap saturates instead.
func (c *Cell) Add(d CTEvent) (attention bool) {
	raceRelease()
	if d.Success != 0 {
		addSaturated(&c.success, d.Success)
	}
	if d.Failure != 0 {
		addSaturated(&c.failure, d.Failure)
	}
	return c.attention.Load() != 0
}

// addSaturated adds d to w, saturating at the largest uint64. One atomic add, not
// a load and a compare-and-swap: a writer in another process takes the cache line
// once instead of reading it first and then asking for it again. An add that wraps
// is seen by the adder (the sum is below d) and turned into the saturated value;
// an add that follows a wrap before that store wraps in turn, or lands on the
// saturated value and wraps, and is turned back the same way.
func addSaturated(w *atomic.Uint64, d uint64) {
	if n := w.Add(d); n < d {
		w.Store(math.MaxUint64)
	}
}

// Counter is a counting event (PtlCTAlloc) with its list of triggered operations.
//
// All methods are safe for concurrent use (see the package comment). Get, Set and Inc do
// not allocate; AddTrigger allocates only when the pending list grows.
type Counter struct {
	mu    sync.Mutex
	cell  atomic.Pointer[Cell] // where the value lives: own, or the caller's (NewCounterAt) until Free
	own   Cell
	freed bool
	gone  atomic.Bool // freed, for Inc's and Get's lock-free paths
	// setSeq is odd while Set writes the two words of the value (under mu): Get
	// reads without the lock and retries a read that a Set overlapped, so it never
	// returns half of one Set.
	setSeq  atomic.Uint64
	firing  bool   // a goroutine is running this counter's ready triggers
	seq     uint64 // registrations so far: the tie-break of equal thresholds
	trig    trigHeap
	waiters counterWaiters
}

// NewCounter allocates a counting event with success and failure zero.
func NewCounter() *Counter {
	c := &Counter{}
	c.cell.Store(&c.own)
	return c
}

// NewCounterAt allocates a counting event whose value lives in cell, which the caller
// placed (memory shared with other processes, or memory that C code reads) and zeroes
// here. The counter uses cell until Free, then copies the value into memory of its own
// and never touches cell again: the caller may then reuse it, but must keep it mapped
// as long as a concurrent Reached may still be reading it.
func NewCounterAt(cell *Cell) *Counter {
	c := &Counter{}
	cell.success.Store(0)
	cell.failure.Store(0)
	cell.attention.Store(0)
	c.cell.Store(cell)
	return c
}

// Cell returns where the value lives (the caller's cell of NewCounterAt, until Free).
func (c *Counter) Cell() *Cell { return c.cell.Load() }

// value reads the current value.
func (c *Counter) value() CTEvent { return c.cell.Load().Load() }

// Reached reports, without locking, whether the counter meets a Wait for test
// (success >= test or any failure). It reads the value's words one at a time, so a
// caller acts on it only after confirming with Get: it is the cheap check of a
// polling loop.
func (c *Counter) Reached(test uint64) bool {
	cell := c.cell.Load()
	ok := cell.success.Load() >= test || cell.failure.Load() > 0
	raceAcquire()
	return ok
}

// Get returns the current value (PtlCTGet), or ErrFreed. It takes no lock (a
// polling loop calls it per round): a read that a Set overlapped is read again,
// and a counter found freed after the read reports ErrFreed, since its cell may
// already serve another counter.
func (c *Counter) Get() (CTEvent, error) {
	for {
		seq := c.setSeq.Load()
		if seq&1 != 0 {
			runtime.Gosched() // a Set is writing the two words
			continue
		}
		v := c.value()
		if c.gone.Load() {
			return CTEvent{}, ErrFreed
		}
		if c.setSeq.Load() == seq {
			return v, nil
		}
	}
}

// Notice tells the counter that its cell changed without its lock (Cell.Add reported
// attention): it wakes the waiters and fires the triggers the new value reached. It
// does nothing after Free.
func (c *Counter) Notice() {
	c.mu.Lock()
	if c.freed {
		c.mu.Unlock()
		return
	}
	c.waiters.wakeReached(c.value())
	c.runTriggersLocked()
}

// attendLocked keeps the attention word true to the waiters and triggers. Called
// with c.mu held after either changes.
func (c *Counter) attendLocked() {
	var a uint32
	if len(c.waiters) > 0 || len(c.trig) > 0 {
		a = 1
	}
	cell := c.cell.Load()
	if cell.attention.Load() != a {
		cell.attention.Store(a)
	}
}

// addWaiterLocked registers w, waiting for test (see reached); the caller checks
// the value after it (see Cell). Changes wake w only once they meet test.
func (c *Counter) addWaiterLocked(w *waiter, test uint64) {
	c.waiters.add(w, test)
	c.attendLocked()
}

// removeWaiterLocked unregisters w.
func (c *Counter) removeWaiterLocked(w *waiter) {
	c.waiters.remove(w)
	c.attendLocked()
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
	cell := c.cell.Load()
	raceRelease()
	c.setSeq.Add(1)
	cell.success.Store(v.Success)
	cell.failure.Store(v.Failure)
	c.setSeq.Add(1)
	c.waiters.wakeReached(c.value())
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
	// Without waiters or pending triggers (the attention word is clear) the add
	// needs no lock: as an outside writer's Cell.Add, it adds first and then looks
	// at the attention word, which a waiter or trigger sets under the lock before it
	// checks the value; so either that check sees the add, or the add sees the word
	// and takes the lock to wake and fire. Outside adds may race with this one: the
	// compare-and-swap keeps both, and the overflow check applies to the value this
	// add really changes.
	if c.gone.Load() {
		return ErrFreed
	}
	cell := c.cell.Load()
	raceRelease()
	if !addChecked(&cell.success, d.Success) || !addChecked(&cell.failure, d.Failure) {
		return ErrCounterOverflow
	}
	if cell.attention.Load() == 0 {
		return nil
	}
	c.mu.Lock()
	if c.freed {
		c.mu.Unlock()
		return nil // freed meanwhile: nobody left to wake
	}
	c.waiters.wakeReached(c.value())
	c.runTriggersLocked()
	return nil
}

// addChecked adds d to w unless the sum would wrap, which it reports as false.
func addChecked(w *atomic.Uint64, d uint64) bool {
	if d == 0 {
		return true
	}
	for {
		old := w.Load()
		n := old + d
		if n < old {
			return false
		}
		if w.CompareAndSwap(old, n) {
			return true
		}
	}
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
	c.attendLocked()
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
	c.attendLocked()
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
	c.gone.Store(true)
	pending := c.trig.drain()
	c.waiters.wakeAll()
	if cell := c.cell.Load(); cell != &c.own {
		// Leave the caller's cell: the value stays readable here (Reached) and the
		// cell may be reused.
		v := cell.Load()
		c.own.success.Store(v.Success)
		c.own.failure.Store(v.Failure)
		c.cell.Store(&c.own)
		cell.attention.Store(0)
	}
	c.mu.Unlock()
	cancelAll(pending)
	return nil
}

// readyLocked reports whether the lowest pending trigger may fire.
func (c *Counter) readyLocked() bool {
	return !c.freed && len(c.trig) > 0 && c.trig[0].threshold <= c.value().total()
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
		c.attendLocked()
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
