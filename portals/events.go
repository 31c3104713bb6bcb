package portals

import (
	"context"
	"fmt"
	"iter"

	"github.com/goportals/goportals/ptlerr"

	"github.com/goportals/goportals/internal/nic"
)

// EQ is an event queue (ptl_handle_eq_t). Compare handles with ==.
type EQ struct {
	ni *NI
	q  *nic.EQ
}

// EQAlloc allocates an event queue of count events (PtlEQAlloc).
func (ni *NI) EQAlloc(count int) (*EQ, error) {
	if ni == nil || ni.n == nil {
		return nil, errNil("PtlEQAlloc", "NI")
	}
	q, err := ni.n.EQAlloc(count)
	if err != nil {
		return nil, err
	}
	return &EQ{ni: ni, q: q}, nil
}

// NI returns the network interface the queue belongs to (PtlNIHandle).
func (e *EQ) NI() *NI { return e.ni }

// Free releases the queue (PtlEQFree); callers waiting on it return Interrupted.
func (e *EQ) Free() error {
	if e == nil || e.q == nil {
		return errNil("PtlEQFree", "event queue")
	}
	return e.q.Free()
}

// Get returns the next event without blocking (PtlEQGet), after running the
// engine's progress once: EQEmpty when there is none, EQDropped with a valid event
// after an overflow. An empty poll allocates nothing.
func (e *EQ) Get() (Event, error) {
	if e == nil || e.q == nil {
		return Event{}, errNil("PtlEQGet", "event queue")
	}
	return e.q.Get()
}

// Wait returns the next event, driving the engine while it waits (PtlEQWait). It
// gives up when ctx ends (EQEmpty joined with the context's error).
func (e *EQ) Wait(ctx context.Context) (Event, error) {
	if e == nil || e.q == nil {
		return Event{}, errNil("PtlEQWait", "event queue")
	}
	return e.q.Wait(ctx)
}

// Events iterates over the queue's events as they arrive, until ctx ends, the
// queue is freed, or the loop stops. An EQDropped error comes with its (valid)
// event and the iteration goes on; any other error ends it.
func (e *EQ) Events(ctx context.Context) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		for {
			ev, err := e.Wait(ctx)
			if err != nil && ErrnoOf(err) != EQDropped {
				yield(ev, err)
				return
			}
			if !yield(ev, err) {
				return
			}
		}
	}
}

// Poll waits for the next event on any of eqs (PtlEQPoll) and returns it with the
// index of its queue.
func Poll(ctx context.Context, eqs ...*EQ) (Event, int, error) {
	qs := make([]*nic.EQ, len(eqs))
	for i, e := range eqs {
		if e == nil || e.q == nil {
			return Event{}, -1, errNil("PtlEQPoll", "event queue")
		}
		qs[i] = e.q
	}
	return nic.EQPoll(ctx, qs)
}

// CT is a counting event (ptl_handle_ct_t): a pair of counters, successes and
// failures, that operations and entries bump. Compare handles with ==.
type CT struct {
	ni *NI
	c  *nic.CT
}

// CTAlloc allocates a counting event at zero (PtlCTAlloc).
func (ni *NI) CTAlloc() (*CT, error) {
	if ni == nil || ni.n == nil {
		return nil, errNil("PtlCTAlloc", "NI")
	}
	c, err := ni.n.CTAlloc()
	if err != nil {
		return nil, err
	}
	return &CT{ni: ni, c: c}, nil
}

// NI returns the network interface the counter belongs to (PtlNIHandle).
func (c *CT) NI() *NI { return c.ni }

// invalid reports a handle that names no counter (a zero CT value, or one from
// no CTAlloc), as opposed to nil, which means "none" in a spec.
func (c *CT) invalid() bool { return c != nil && c.c == nil }

// invalid reports a non-nil handle that names no event queue.
func (e *EQ) invalid() bool { return e != nil && e.q == nil }

// errInvalid is the error of a spec or option naming an invalid handle.
func errInvalid(op, what string) error {
	return ptlerr.New(op, ArgInvalid, fmt.Errorf("invalid %s handle", what))
}

func (c *CT) core() *nic.CT {
	if c == nil || c.c == nil {
		return nil
	}
	return c.c
}

// Free releases the counter (PtlCTFree); waiters return Interrupted and pending
// triggered operations on it are dropped.
func (c *CT) Free() error {
	if c == nil || c.c == nil {
		return errNil("PtlCTFree", "counting event")
	}
	return c.c.Free()
}

// Get returns the counter's value without blocking (PtlCTGet).
func (c *CT) Get() (CTEvent, error) {
	if c == nil || c.c == nil {
		return CTEvent{}, errNil("PtlCTGet", "counting event")
	}
	return c.c.Get()
}

// ValueAddr returns the address of the counter's value laid out as C's
// ptl_ct_event_t (success then failure, 64-bit words), in memory outside the Go heap
// that stays mapped for the life of the process, for code that reads the value in
// place without calling in (the C ABI answers PtlCTGet this way). The value there is
// the one Get returns, except that reading it drives no engine progress. The address is
// meaningful until Free or the NI's Fini; then it belongs to the next counter.
func (c *CT) ValueAddr() (uintptr, error) {
	if c == nil || c.c == nil {
		return 0, errNil("PtlCTGet", "counting event")
	}
	return c.c.ValueAddr()
}

// Wait waits until the successes reach test or any failure is counted (PtlCTWait,
// as the specification says: a failure ends every wait), driving the engine
// while it waits; it gives up when ctx ends (CTNoneReached).
func (c *CT) Wait(ctx context.Context, test uint64) (CTEvent, error) {
	if c == nil || c.c == nil {
		return CTEvent{}, errNil("PtlCTWait", "counting event")
	}
	return c.c.Wait(ctx, test)
}

// Set sets the counter (PtlCTSet), which may release triggered operations.
func (c *CT) Set(v CTEvent) error {
	if c == nil || c.c == nil {
		return errNil("PtlCTSet", "counting event")
	}
	return c.c.Set(v)
}

// Inc adds v to the counter (PtlCTInc), which may release triggered operations.
func (c *CT) Inc(v CTEvent) error {
	if c == nil || c.c == nil {
		return errNil("PtlCTInc", "counting event")
	}
	return c.c.Inc(v)
}

// IncWhen adds v to c when t's counter reaches t's threshold (PtlTriggeredCTInc).
func (c *CT) IncWhen(t Trigger, v CTEvent) error {
	if c == nil || c.c == nil || t.CT == nil || t.CT.c == nil {
		return errNil("PtlTriggeredCTInc", "counting event")
	}
	return nic.TriggeredCTInc(c.c, v, t.CT.c, t.Threshold)
}

// SetWhen sets c to v when t's counter reaches t's threshold (PtlTriggeredCTSet).
func (c *CT) SetWhen(t Trigger, v CTEvent) error {
	if c == nil || c.c == nil || t.CT == nil || t.CT.c == nil {
		return errNil("PtlTriggeredCTSet", "counting event")
	}
	return nic.TriggeredCTSet(c.c, v, t.CT.c, t.Threshold)
}

// CancelTriggered drops the triggered operations still waiting on the counter
// (PtlCTCancelTriggered).
func (c *CT) CancelTriggered() error {
	if c == nil || c.c == nil {
		return errNil("PtlCTCancelTriggered", "counting event")
	}
	return c.c.CancelTriggered()
}

// PollCT waits until one of cts reaches its test (PtlCTPoll): the successes of
// cts[i] reach tests[i], or cts[i] counts a failure.
// It returns the value and the index of the counter.
func PollCT(ctx context.Context, cts []*CT, tests []uint64) (CTEvent, int, error) {
	cs := make([]*nic.CT, len(cts))
	for i, c := range cts {
		if c == nil || c.c == nil {
			return CTEvent{}, -1, errNil("PtlCTPoll", "counting event")
		}
		cs[i] = c.c
	}
	return nic.CTPoll(ctx, cs, tests)
}
