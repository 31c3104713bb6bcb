package rma

import (
	"errors"
	"fmt"

	"github.com/goportals/goportals/portals"
)

// Sentinel causes of rma errors. Every error this package returns is an *Error
// whose cause matches one of these, a *RemoteError, an error of package portals
// or a context error; errors.Is also matches its Portals code (portals.ArgInvalid
// for bad arguments, portals.Fail for failed transfers).
var (
	// ErrBadRank: the rank is outside [0, Size()).
	ErrBadRank = errors.New("rank out of range")
	// ErrOutOfRange: the bytes addressed are not all inside the target's window
	// (a negative offset, or one past the end of the memory the target exposed).
	ErrOutOfRange = errors.New("outside the window")
	// ErrMisaligned: an atomic's offset is not a multiple of its type's size.
	ErrMisaligned = errors.New("offset not aligned to the atomic's size")
	// ErrClosed: the window was closed.
	ErrClosed = errors.New("window closed")
	// ErrRemote: the target refused an operation or it never reached it; the
	// *RemoteError in the chain says how.
	ErrRemote = errors.New("operation failed")
)

// Error is the error of one call on a window: the call, the peer and the byte
// range it addressed, the Portals code and the cause.
type Error struct {
	// Op names the call ("WriteAt", "Flush", "FetchAdd", ...).
	Op string
	// Rank is the target rank, or -1 when the call has none.
	Rank int
	// Offset and Len are the target window's byte range the call addressed.
	Offset int64
	Len    int
	// Errno is the Portals code: ArgInvalid for a bad argument, Fail for a failed
	// transfer, or the code of the portals call that failed.
	Errno portals.Errno
	// Err is the cause.
	Err error
}

// Error formats the error as "rma: Op rank R [off, off+len): PTL_CODE: cause".
func (e *Error) Error() string {
	s := "rma: " + e.Op
	if e.Rank >= 0 {
		s += fmt.Sprintf(" rank %d [%d, %d)", e.Rank, e.Offset, e.Offset+int64(e.Len))
	}
	s += ": " + e.Errno.Error()
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the Portals code and the cause, so errors.Is matches either.
func (e *Error) Unwrap() []error {
	if e.Err == nil {
		return []error{e.Errno}
	}
	return []error{e.Errno, e.Err}
}

// RemoteError says how an operation failed after it was started: the failure
// type the target (or the network) reported, and how many operations failed
// when a Flush reports several at once.
type RemoteError struct {
	// Fail is the failure type of the operation's completion event; Flush, which
	// counts completions without their events, leaves it zero.
	Fail portals.NIFail
	// Count is the number of operations that failed (1 for a blocking call).
	Count uint64
}

// Error describes the failure.
func (e *RemoteError) Error() string {
	if e.Fail == portals.NIOK {
		return fmt.Sprintf("%d operation(s) failed at the target", e.Count)
	}
	return "target reported " + e.Fail.String()
}

// Is makes a RemoteError match ErrRemote.
func (e *RemoteError) Is(target error) bool { return target == ErrRemote }

// newError builds an *Error; a nil cause stays nil. A cause that carries a
// Portals code (an error of package portals) lends it its code.
func newError(op string, rank int, off int64, n int, code portals.Errno, cause error) error {
	if cause == nil {
		return nil
	}
	if code == portals.OK {
		code = portals.ErrnoOf(cause)
	}
	return &Error{Op: op, Rank: rank, Offset: off, Len: n, Errno: code, Err: cause}
}
