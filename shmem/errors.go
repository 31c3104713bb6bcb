package shmem

import (
	"errors"
	"fmt"

	"github.com/goportals/goportals/portals"
)

// Errors that calls return wrapped in an *OpError; match them with errors.Is.
var (
	// ErrInvalidPE: a PE number outside [0, NPEs()).
	ErrInvalidPE = errors.New("shmem: invalid PE")
	// ErrOutOfRange: an index, slice or length outside a symmetric object or a
	// buffer, or an object that is not (or no longer) in the symmetric heap.
	ErrOutOfRange = errors.New("shmem: out of range")
	// ErrInvalidArg: any other bad argument (alignment, stride, size mismatch,
	// options, a destroyed context).
	ErrInvalidArg = errors.New("shmem: invalid argument")
	// ErrNoSpace: the symmetric heap cannot hold the allocation.
	ErrNoSpace = errors.New("shmem: symmetric heap exhausted")
	// ErrRemote: an operation completed with a failure at the network level (a
	// PE that died, a refused access).
	ErrRemote = errors.New("shmem: remote operation failed")
	// ErrNotHeld: ClearLock of a lock the calling PE does not hold.
	ErrNotHeld = errors.New("shmem: lock not held")
	// ErrClosed: a call on a World after Close.
	ErrClosed = errors.New("shmem: world closed")
	// ErrNotSupported: a feature this implementation does not have. It is the
	// module's one such sentinel (portals.ErrNotSupported), so errors.Is matches
	// it whichever layer refused.
	ErrNotSupported = portals.ErrNotSupported
)

// OpError is the error of a shmem call: Op names the call (OpenSHMEM's name,
// such as "shmem_put"), Err says why and wraps the cause (one of the Err
// values above, a transport error, or the context's error).
type OpError struct {
	Op  string
	Err error
}

// Error returns "op: cause".
func (e *OpError) Error() string { return e.Op + ": " + e.Err.Error() }

// Unwrap returns the cause.
func (e *OpError) Unwrap() error { return e.Err }

// opErr wraps err (nil stays nil) for op.
func opErr(op string, err error) error {
	if err == nil {
		return nil
	}
	var oe *OpError
	if errors.As(err, &oe) && oe.Op == op {
		return err
	}
	return &OpError{Op: op, Err: err}
}

// errf builds an error wrapping kind with a detail.
func errf(kind error, format string, args ...any) error {
	return fmt.Errorf("%w: %s", kind, fmt.Sprintf(format, args...))
}
