package eq

import (
	"errors"
	"fmt"
)

// ErrEQEmpty reports that an event queue holds no event (PTL_EQ_EMPTY). Wait and Poll
// return it, joined with the context's error, when their context ends first.
var ErrEQEmpty = errors.New("eq: event queue empty")

// ErrEQDropped accompanies a valid event: at least one event between this one and the
// last event obtained from the same queue was dropped because the queue was full
// (PTL_EQ_DROPPED). The returned event is valid and consumed.
var ErrEQDropped = errors.New("eq: events dropped before this event")

// ErrInterrupted reports that the queue or counter a caller was waiting on was freed
// while it waited (PTL_INTERRUPTED).
var ErrInterrupted = errors.New("eq: wait interrupted by free")

// ErrFreed reports a call on a queue or counter that was already freed (the Portals
// reference answers PTL_ARG_INVALID for the stale handle).
var ErrFreed = errors.New("eq: object already freed")

// ErrCTNoneReached reports that no counting event reached its test before the context
// ended (PTL_CT_NONE_REACHED). It is joined with the context's error.
var ErrCTNoneReached = errors.New("eq: no counting event reached its test")

// ErrInvalid reports an invalid argument (PTL_ARG_INVALID); the wrapping error says which.
var ErrInvalid = errors.New("eq: invalid argument")

// ErrCounterOverflow reports an increment that would wrap a 64-bit counter field; the
// counter is left unchanged.
var ErrCounterOverflow = errors.New("eq: counter would overflow")

// ErrUnknownName reports a name that a Parse function does not know.
var ErrUnknownName = errors.New("eq: unknown name")

// Pre-built wrapped errors keep the fast paths free of allocations even when they fail.
var (
	errIncBoth    = fmt.Errorf("%w: increment sets both success and failure", ErrInvalid)
	errNilTrigger = fmt.Errorf("%w: nil trigger", ErrInvalid)
	errNoQueues   = fmt.Errorf("%w: no event queues to poll", ErrInvalid)
	errNilQueue   = fmt.Errorf("%w: nil event queue", ErrInvalid)
	errNoCounters = fmt.Errorf("%w: no counters to poll", ErrInvalid)
	errNilCounter = fmt.Errorf("%w: nil counter", ErrInvalid)
	errTestsLen   = fmt.Errorf("%w: counters and tests differ in length", ErrInvalid)
	errNilEvent   = fmt.Errorf("%w: nil event", ErrInvalid)
)

// waitEnded builds the error returned when a wait's context ends first: the Portals
// status joined with the context's error, so errors.Is matches either.
func waitEnded(status, ctxErr error) error {
	return fmt.Errorf("%w: %w", status, ctxErr)
}
