package verbs

import (
	"errors"

	"github.com/goportals/goportals/ptlerr"
)

// Errors returned synchronously by the verbs calls (post, create, register). Errors of
// the operations themselves arrive asynchronously as a work completion Status.
var (
	// ErrNotSupported: the provider or the machine lacks the feature.
	ErrNotSupported = ptlerr.ErrNotSupported
	// ErrInvalidArgument: a malformed argument (bad flags, bad SGE, zero length...).
	ErrInvalidArgument = errors.New("verbs: invalid argument")
	// ErrMemlock: pinning would exceed RLIMIT_MEMLOCK or the kernel refused mlock.
	ErrMemlock = errors.New("verbs: cannot pin memory (RLIMIT_MEMLOCK)")
	// ErrNoResources: a table or queue is full (MR table, QP table, send queue, CQ).
	ErrNoResources = errors.New("verbs: out of resources")
	// ErrClosed: the object (or its context) was closed or destroyed.
	ErrClosed = errors.New("verbs: closed")
	// ErrQPState: the queue pair is not in a state that allows the call (sends
	// before Connect, a second Connect). Work posted in the error state is accepted
	// and completes with StatusWorkRequestFlushed, as in ibverbs.
	ErrQPState = errors.New("verbs: invalid queue pair state")
	// ErrBusy: the object is still in use (an MR used by posted work, a PD with children).
	ErrBusy = errors.New("verbs: resource busy")
	// ErrNoDevice: no device of that name.
	ErrNoDevice = errors.New("verbs: no such device")
	// ErrUnknownProvider: a provider name that is none of auto, soft, ibv, loopback
	// (or another registered provider).
	ErrUnknownProvider = errors.New("verbs: unknown provider")
	// ErrUnreachable: the peer address cannot be reached by this provider
	// (another node, a dead process, an incompatible job key).
	ErrUnreachable = errors.New("verbs: peer unreachable")
)

// OpError is the error of one verbs call: Op names the call, Err is one of the
// sentinel errors above (possibly wrapping a system error).
type OpError struct {
	Op  string
	Err error
}

// Error formats the error as "op: err".
func (e *OpError) Error() string { return e.Op + ": " + e.Err.Error() }

// Unwrap returns the underlying error so errors.Is works on the sentinels.
func (e *OpError) Unwrap() error { return e.Err }

// wrapped joins a sentinel and a cause so that errors.Is matches both.
type wrapped struct {
	kind, cause error
}

func (w *wrapped) Error() string   { return w.kind.Error() + ": " + w.cause.Error() }
func (w *wrapped) Unwrap() []error { return []error{w.kind, w.cause} }

// Errorf builds an *OpError for op whose Err matches kind with errors.Is and
// carries cause (which may be nil) as well.
func Errorf(op string, kind, cause error) error {
	if cause == nil {
		return &OpError{Op: op, Err: kind}
	}
	return &OpError{Op: op, Err: &wrapped{kind: kind, cause: cause}}
}
