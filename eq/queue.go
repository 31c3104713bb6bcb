package eq

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
)

// MaxQueueSize bounds the slots of one event queue (size plus reserve), so a bad count
// cannot make the engine allocate without limit: 1<<20 events are about 100 MiB.
const MaxQueueSize = 1 << 20

// Queue is an event queue (PtlEQAlloc): a bounded ring of events.
//
// Posting never blocks and never fails for lack of room: when every slot is full the
// oldest event is overwritten, as Portals specifies, and the next event the consumer
// obtains comes with ErrEQDropped. Flow control is the engine's decision: before
// delivering to a flow-controlled portal table entry it checks [Queue.Avail] and, when it
// is zero, disables the entry and posts PT_DISABLED into the reserved slots.
//
// All methods are safe for concurrent use (see the package comment).
type Queue struct {
	mu      sync.Mutex
	buf     []Event
	head    int  // index of the oldest event
	n       int  // events held
	size    int  // slots not reserved (the requested count)
	gap     bool // events were dropped just before buf[head]
	freed   bool
	dropped uint64 // events overwritten since allocation
	waiters waiterSet
	// busy mirrors n, or is -1 once freed: Poll reads it without the lock to skip empty
	// queues. It is written only under mu, so a zero read can be stale only by a post
	// that Poll's locked registration pass then sees.
	busy atomic.Int64
}

// NewQueue allocates an event queue with room for size events plus reserve slots kept
// for PT_DISABLED events of flow-controlled portal table entries (the Portals reference
// adds one per portal index). size must be at least 1, reserve at least 0, and their sum
// at most MaxQueueSize.
func NewQueue(size, reserve int) (*Queue, error) {
	if size < 1 || reserve < 0 || size > MaxQueueSize || reserve > MaxQueueSize-size {
		return nil, fmt.Errorf("%w: event queue size %d + reserve %d (want size >= 1, reserve >= 0, sum <= %d)",
			ErrInvalid, size, reserve, MaxQueueSize)
	}
	return &Queue{buf: make([]Event, size+reserve), size: size}, nil
}

// Post appends a copy of *ev. When the ring is full it overwrites the oldest event and
// marks the gap for the consumer. It wakes every waiter. It returns ErrFreed, and keeps
// nothing, if the queue was freed, and an ErrInvalid error for a nil event.
// Post does not allocate.
func (q *Queue) Post(ev *Event) error {
	if ev == nil {
		return errNilEvent
	}
	q.mu.Lock()
	if q.freed {
		q.mu.Unlock()
		return ErrFreed
	}
	c := len(q.buf)
	if q.n == c {
		q.buf[q.head] = *ev
		q.head++
		if q.head == c {
			q.head = 0
		}
		q.gap = true
		q.dropped++
	} else {
		i := q.head + q.n
		if i >= c {
			i -= c
		}
		q.buf[i] = *ev
		q.n++
		q.busy.Store(int64(q.n))
	}
	q.waiters.wakeAll()
	q.mu.Unlock()
	return nil
}

// Get removes and returns the oldest event without blocking (PtlEQGet). It returns
// ErrEQEmpty when there is none, ErrEQDropped together with a valid event when events
// were dropped just before that event, and ErrFreed after Free. Get does not allocate.
func (q *Queue) Get() (Event, error) {
	q.mu.Lock()
	ev, err := q.getLocked()
	q.mu.Unlock()
	return ev, err
}

// getLocked is Get with q.mu held.
func (q *Queue) getLocked() (Event, error) {
	if q.freed {
		return Event{}, ErrFreed
	}
	if q.n == 0 {
		return Event{}, ErrEQEmpty
	}
	ev := q.buf[q.head]
	q.buf[q.head] = Event{}
	q.head++
	if q.head == len(q.buf) {
		q.head = 0
	}
	q.n--
	q.busy.Store(int64(q.n))
	if q.gap {
		q.gap = false
		return ev, ErrEQDropped
	}
	return ev, nil
}

// Wait removes and returns the oldest event, blocking until one is posted (PtlEQWait).
// It returns ErrEQDropped with a valid event as Get does, ErrInterrupted if the queue is
// freed while it waits, ErrFreed if it was freed before, and ErrEQEmpty joined with
// ctx.Err() when ctx ends first.
func (q *Queue) Wait(ctx context.Context) (Event, error) {
	qs := [1]*Queue{q}
	ev, _, err := pollQueues(ctx, qs[:])
	return ev, err
}

// Free releases the queue (PtlEQFree): waiters return ErrInterrupted, later calls
// ErrFreed, and events still held are discarded. Freeing twice returns ErrFreed.
func (q *Queue) Free() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.freed {
		return ErrFreed
	}
	q.freed = true
	q.buf = nil
	q.n = 0
	q.busy.Store(-1)
	q.waiters.wakeAll()
	return nil
}

// Len returns the number of events held.
func (q *Queue) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.n
}

// Cap returns the number of slots, reserved ones included.
func (q *Queue) Cap() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.buf)
}

// Avail returns how many more events fit before the unreserved part is full: the
// engine's flow-control test (zero means "disable the flow-controlled entry").
func (q *Queue) Avail() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.freed || q.n >= q.size {
		return 0
	}
	return q.size - q.n
}

// Dropped returns the number of events overwritten since the queue was allocated.
func (q *Queue) Dropped() uint64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.dropped
}
