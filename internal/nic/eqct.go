package nic

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/goportals/goportals/eq"
)

// eqErr maps an eq error to the Portals code.
func eqErr(op string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, eq.ErrEQDropped):
		return opErr(op, EQDropped, nil)
	case errors.Is(err, eq.ErrEQEmpty):
		return opErr(op, EQEmpty, contextCause(err))
	case errors.Is(err, eq.ErrCTNoneReached):
		return opErr(op, CTNoneReached, contextCause(err))
	case errors.Is(err, eq.ErrInterrupted):
		return opErr(op, Interrupted, nil)
	case errors.Is(err, eq.ErrCounterOverflow):
		return opErr(op, ArgInvalid, err)
	case errors.Is(err, eq.ErrInvalid), errors.Is(err, eq.ErrFreed):
		return opErr(op, ArgInvalid, err)
	}
	return opErr(op, Fail, err)
}

func contextCause(err error) error {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return context.DeadlineExceeded
	case errors.Is(err, context.Canceled):
		return context.Canceled
	}
	return nil
}

// EQ is an event queue (ptl_handle_eq_t).
type EQ struct {
	ni *NI
	q  *eq.Queue
}

// EQAlloc allocates an event queue of count events (PtlEQAlloc).
func (ni *NI) EQAlloc(count int) (*EQ, error) {
	const op = "PtlEQAlloc"
	if err := ni.check(op); err != nil {
		return nil, err
	}
	if count <= 0 {
		return nil, opErr(op, ArgInvalid, fmt.Errorf("count %d", count))
	}
	ni.mu.Lock()
	defer ni.mu.Unlock()
	if ni.dead.Load() {
		return nil, opErr(op, ArgInvalid, fmt.Errorf("NI finalized"))
	}
	if len(ni.eqs) >= ni.limits.MaxEQs {
		return nil, opErr(op, NoSpace, nil)
	}
	q, err := eq.NewQueue(count, ni.limits.MaxPTIndex+1)
	if err != nil {
		return nil, opErr(op, NoSpace, err)
	}
	e := &EQ{ni: ni, q: q}
	ni.eqs[e] = struct{}{}
	return e, nil
}

// Free releases the queue (PtlEQFree); waiters return Interrupted. A queue
// released already, by Free or with its NI, is ArgInvalid.
func (e *EQ) Free() error {
	if e == nil || e.q == nil {
		return nilHandle("PtlEQFree", "event queue")
	}
	if err := e.q.Free(); err != nil {
		return eqErr("PtlEQFree", err)
	}
	e.ni.mu.Lock()
	delete(e.ni.eqs, e)
	e.ni.mu.Unlock()
	return nil
}

// Get returns the next event without blocking (PtlEQGet): EQEmpty when there is
// none, EQDropped (with a valid event) after an overflow. When the queue is empty
// it runs a round of the NI's progress and looks again, so a caller that spins on
// Get completes operations by itself, whether or not the progress goroutine runs.
func (e *EQ) Get() (Event, error) {
	if e == nil || e.q == nil {
		return Event{}, nilHandle("PtlEQGet", "event queue")
	}
	ev, err := e.q.Get()
	if err == eq.ErrEQEmpty && !e.ni.dead.Load() && e.ni.progressOnce(true) > 0 {
		ev, err = e.q.Get()
	}
	if err == eq.ErrEQEmpty {
		return ev, errEQGetEmpty // the common answer of a poll: no allocation
	}
	return ev, eqErr("PtlEQGet", err)
}

// errEQGetEmpty is the (immutable) error of an empty EQ.Get.
var errEQGetEmpty = &OpError{Op: "PtlEQGet", Errno: EQEmpty}

// A waiting caller (EQ and CT waits and polls) drives progress itself for
// waitSpin rounds and then for waitSpinTime more (its clock starts only at round
// waitSpin, so a call that returns early never reads it) before it blocks (and
// leaves progress to the NI's goroutine). The reference implementation's waits
// never block; ours do after a while, but not as soon as a peer is a scheduling
// slice late: on a host whose cores are all busy a peer's thread can be off its
// core for a millisecond or more, and a waiter that blocked by then came back
// only through a chain of wake-ups (its counter's notice, a goroutine readied
// behind another's system call, a thread placed on a busy core) that took up to
// 20 ms here (8-byte direct puts, 200000 round trips: the slowest 10–20 ms with
// 20000 rounds, about a millisecond, and 1–3.5 ms when the waits did not block;
// mean one-way 0.39–0.41 against 0.33–0.34 µs).
const waitSpin = 20000

// waitSpinTime is the time part of the budget (a variable for the tests).
var waitSpinTime = 10 * time.Millisecond

// waitBudget says whether a waiting caller keeps polling at round i. The clock is
// read once per 1024 rounds past waitSpin.
type waitBudget struct {
	since time.Time
	over  bool
}

func (b *waitBudget) more(i int) bool {
	switch {
	case i < waitSpin:
		return true
	case b.over:
		return false
	case i == waitSpin:
		b.since = time.Now()
	case i%1024 == 0 && time.Since(b.since) >= waitSpinTime:
		b.over = true
		return false
	}
	return true
}

// waitYieldEvery is how many rounds of a waiting caller's spin go between two
// yields of its processor (waitYield). A yield while another processor is idle
// makes the scheduler wake an OS thread to look for work; on a small host that
// thread preempts the one spinning or copying on the other core (most of the
// context switches of a two-process put ping-pong were these wakes), so the spin
// yields rarely.
const waitYieldEvery = 1024

// waitYield lets other goroutines have the processor during a waiting caller's
// spin (a progress round preempted on it, with GOMAXPROCS=1, finishes), once per
// waitYieldEvery rounds. Called every 64 rounds (round&63 == 63).
func waitYield(round int) {
	if round%waitYieldEvery != waitYieldEvery-1 {
		return
	}
	if countAppPolls {
		waitYields.Add(1)
	}
	runtime.Gosched()
}

// waitYields counts waitYield's yields for the package's tests (countAppPolls).
var waitYields atomic.Uint64

// Wait blocks for the next event (PtlEQWait). It first drives the NI's progress
// itself for a while, then sleeps.
func (e *EQ) Wait(ctx context.Context) (Event, error) {
	if e == nil || e.q == nil {
		return Event{}, nilHandle("PtlEQWait", "event queue")
	}
	var budget waitBudget
	for i := 0; budget.more(i) || e.ni.noGoroutine; i++ {
		ev, err := e.q.Get()
		if err == nil || !errors.Is(err, eq.ErrEQEmpty) {
			return ev, eqErr("PtlEQWait", interrupted(err, i > 0))
		}
		if i&63 == 63 {
			if ctx.Err() != nil {
				break
			}
			waitYield(i)
		}
		if e.ni.dead.Load() {
			break // the queue dies with the NI: wait for that
		}
		e.ni.progressOnce(true)
	}
	e.ni.kick()
	ev, err := e.q.Wait(ctx)
	return ev, eqErr("PtlEQWait", interrupted(err, true))
}

// interrupted turns the error of an object freed while a wait went on into
// eq.ErrInterrupted (PTL_INTERRUPTED): the object was live when the wait began
// (begun), and only a free before the call is ARG_INVALID.
func interrupted(err error, begun bool) error {
	if begun && errors.Is(err, eq.ErrFreed) {
		return eq.ErrInterrupted
	}
	return err
}

// EQPoll waits for an event on any of eqs (PtlEQPoll) and says which delivered it.
// A context without deadline waits forever; one already expired polls once.
func EQPoll(ctx context.Context, eqs []*EQ) (Event, int, error) {
	qs := make([]*eq.Queue, len(eqs))
	for i, e := range eqs {
		if e == nil || e.q == nil {
			return Event{}, -1, nilHandle("PtlEQPoll", "event queue")
		}
		qs[i] = e.q
	}
	if len(qs) == 0 {
		return Event{}, -1, opErr("PtlEQPoll", ArgInvalid, fmt.Errorf("no event queues"))
	}
	// Drive the progress of the queues' NIs for a while (at least one round, also
	// for an expired context), then sleep.
	var budget waitBudget
	for round := 0; budget.more(round) || eqs[0].ni.noGoroutine; round++ {
		for i, e := range eqs {
			if ev, err := e.q.Get(); err != eq.ErrEQEmpty {
				return ev, i, eqErr("PtlEQPoll", interrupted(err, round > 0))
			}
		}
		if round&63 == 63 {
			if ctx.Err() != nil {
				break
			}
			waitYield(round)
		}
		if !progressNIs(eqNIs(eqs)) || (round > 0 && ctx.Err() != nil) {
			break
		}
	}
	for _, e := range eqs {
		e.ni.kick()
	}
	ev, i, err := eq.Poll(ctx, qs)
	// Every queue was live at the spin's first round: one released since (by
	// PtlEQFree or PtlNIFini, which also ends the spin) interrupted the call.
	return ev, i, eqErr("PtlEQPoll", interrupted(err, true))
}

// eqNIs returns the NIs of eqs (consecutive duplicates once).
func eqNIs(eqs []*EQ) func(func(*NI) bool) {
	return func(yield func(*NI) bool) {
		var last *NI
		for _, e := range eqs {
			if e.ni != last {
				last = e.ni
				if !yield(last) {
					return
				}
			}
		}
	}
}

// progressNIs runs a progress round on each NI; false when one is finalized (its
// queues die with it: wait for that).
func progressNIs(nis func(func(*NI) bool)) bool {
	live := true
	for ni := range nis {
		if ni.dead.Load() {
			live = false
			continue
		}
		ni.progressOnce(true)
	}
	return live
}

// CT is a counting event (ptl_handle_ct_t).
type CT struct {
	ni   *NI
	c    *eq.Counter
	slot int // the counter's cell in ni.cells
}

// CTAlloc allocates a counting event (PtlCTAlloc).
func (ni *NI) CTAlloc() (*CT, error) {
	const op = "PtlCTAlloc"
	if err := ni.check(op); err != nil {
		return nil, err
	}
	ni.mu.Lock()
	defer ni.mu.Unlock()
	if ni.dead.Load() {
		return nil, opErr(op, ArgInvalid, fmt.Errorf("NI finalized"))
	}
	if len(ni.cts) >= ni.limits.MaxCTs {
		return nil, opErr(op, NoSpace, nil)
	}
	if ni.cells == nil {
		s, err := getSlab()
		if err != nil {
			return nil, opErr(op, NoSpace, err)
		}
		ni.cells = s
	}
	slot := ni.cells.take()
	if slot < 0 {
		return nil, opErr(op, NoSpace, nil)
	}
	c := &CT{ni: ni, c: eq.NewCounterAt(ni.cells.cell(slot)), slot: slot}
	ni.cts[c] = struct{}{}
	return c, nil
}

// Free releases the counter (PtlCTFree): its pending triggered operations are
// dropped and its waiters return Interrupted. A counter released already, by Free
// or with its NI, is ArgInvalid.
func (c *CT) Free() error {
	if c == nil || c.c == nil {
		return nilHandle("PtlCTFree", "counting event")
	}
	if err := c.c.Free(); err != nil {
		return eqErr("PtlCTFree", err)
	}
	c.ni.mu.Lock()
	if _, live := c.ni.cts[c]; live {
		// The counter has left its cell (eq.Counter.Free): the slot may serve again.
		delete(c.ni.cts, c)
		c.ni.directCTFreed(c) // no peer counts into the slot once it may serve again
		c.ni.cells.free = append(c.ni.cells.free, c.slot)
	}
	c.ni.mu.Unlock()
	return nil
}

// ValueAddr returns the address of the counter's value, laid out as a
// ptl_ct_event_t (success then failure, 64-bit words) in memory outside the Go heap
// that stays mapped for the life of the process: code that cannot call in (C code
// answering PtlCTGet) reads it in place. The address is meaningful only until Free or
// the NI's finalize; after that it belongs to whichever counter is allocated next.
func (c *CT) ValueAddr() (uintptr, error) {
	if c == nil || c.c == nil {
		return 0, nilHandle("PtlCTGet", "counting event")
	}
	c.ni.mu.Lock()
	defer c.ni.mu.Unlock()
	if _, live := c.ni.cts[c]; !live {
		return 0, opErr("PtlCTGet", ArgInvalid, fmt.Errorf("counting event freed"))
	}
	return uintptr(unsafe.Pointer(c.c.Cell())), nil
}

// Get reads the counter (PtlCTGet), after a round of the NI's progress: a caller
// that spins on Get completes operations by itself.
func (c *CT) Get() (CTEvent, error) {
	if c == nil || c.c == nil {
		return CTEvent{}, nilHandle("PtlCTGet", "counting event")
	}
	if !c.ni.dead.Load() {
		c.ni.progressOnce(true)
	}
	v, err := c.c.Get()
	return v, eqErr("PtlCTGet", err)
}

// Wait blocks until success reaches test or a failure is counted (PtlCTWait).
func (c *CT) Wait(ctx context.Context, test uint64) (CTEvent, error) {
	if c == nil || c.c == nil {
		return CTEvent{}, nilHandle("PtlCTWait", "counting event")
	}
	var budget waitBudget
	for i := 0; budget.more(i) || c.ni.noGoroutine; i++ {
		if c.c.Reached(test) || i&1023 == 0 { // a lock-free check; Get confirms (and sees a free)
			v, err := c.c.Get()
			if err != nil || v.Success >= test || v.Failure > 0 {
				return v, eqErr("PtlCTWait", interrupted(err, i > 0))
			}
		}
		if i&63 == 63 {
			if ctx.Err() != nil {
				break
			}
			waitYield(i)
		}
		if c.ni.dead.Load() {
			break // the counter dies with the NI: wait for that
		}
		c.ni.progressOnce(true)
	}
	c.ni.kick()
	v, err := c.c.Wait(ctx, test)
	return v, eqErr("PtlCTWait", interrupted(err, true))
}

// Set sets the counter (PtlCTSet); triggered operations it reaches fire.
func (c *CT) Set(v CTEvent) error {
	if c == nil || c.c == nil {
		return nilHandle("PtlCTSet", "counting event")
	}
	err := c.c.Set(v)
	c.c.Settle()          // triggers another goroutine was firing on c have fired
	c.ni.issueFired(true) // what the new value released goes out before we return
	return eqErr("PtlCTSet", err)
}

// Inc adds to the counter (PtlCTInc); only one of the two fields may be non-zero.
func (c *CT) Inc(v CTEvent) error {
	if c == nil || c.c == nil {
		return nilHandle("PtlCTInc", "counting event")
	}
	err := c.c.Inc(v)
	c.c.Settle()          // triggers another goroutine was firing on c have fired
	c.ni.issueFired(true) // what the increment released goes out before we return
	return eqErr("PtlCTInc", err)
}

// CancelTriggered drops the counter's pending triggered operations
// (PtlCTCancelTriggered).
func (c *CT) CancelTriggered() error {
	if c == nil || c.c == nil {
		return nilHandle("PtlCTCancelTriggered", "counting event")
	}
	_, err := c.c.CancelTriggered()
	return eqErr("PtlCTCancelTriggered", err)
}

// CTPoll waits until one of cts reaches its test (PtlCTPoll) and says which.
func CTPoll(ctx context.Context, cts []*CT, tests []uint64) (CTEvent, int, error) {
	if len(cts) == 0 || len(cts) != len(tests) {
		return CTEvent{}, -1, nilHandle("PtlCTPoll", "counting event")
	}
	cs := make([]*eq.Counter, len(cts))
	for i, c := range cts {
		if c == nil || c.c == nil {
			return CTEvent{}, -1, nilHandle("PtlCTPoll", "counting event")
		}
		cs[i] = c.c
	}
	var budget waitBudget
	for round := 0; budget.more(round) || cts[0].ni.noGoroutine; round++ {
		for i, c := range cts {
			if c.c.Reached(tests[i]) || round&1023 == 0 {
				v, err := c.c.Get()
				if err != nil || v.Success >= tests[i] || v.Failure > 0 {
					return v, i, eqErr("PtlCTPoll", interrupted(err, round > 0))
				}
			}
		}
		if round&63 == 63 {
			if ctx.Err() != nil {
				break
			}
			waitYield(round)
		}
		if !progressNIs(ctNIs(cts)) || (round > 0 && ctx.Err() != nil) {
			break
		}
	}
	for _, c := range cts {
		c.ni.kick()
	}
	v, i, err := eq.PollCounters(ctx, cs, tests)
	// Every counter was live at the spin's first round (see EQPoll).
	return v, i, eqErr("PtlCTPoll", interrupted(err, true))
}

// ctNIs returns the NIs of cts (consecutive duplicates once).
func ctNIs(cts []*CT) func(func(*NI) bool) {
	return func(yield func(*NI) bool) {
		var last *NI
		for _, c := range cts {
			if c.ni != last {
				last = c.ni
				if !yield(last) {
					return
				}
			}
		}
	}
}

// count adds one success or failure (or bytes) to c, if any.
func (c *CT) count(ok bool, n uint64) {
	if c == nil || c.c == nil {
		return
	}
	if ok {
		c.c.Inc(CTEvent{Success: n})
	} else {
		c.c.Inc(CTEvent{Failure: 1})
	}
}
