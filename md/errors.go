package md

import (
	"errors"
	"fmt"

	"github.com/goportals/goportals/ptlerr"
)

// Errors returned by the package. Each is matched with errors.Is; the errors actually
// returned usually wrap one of them with the details (a *RangeError for bounds).
var (
	// ErrOutOfRange: an offset and length that do not lie inside the memory (see RangeError).
	ErrOutOfRange = errors.New("md: range outside the memory")
	// ErrTooManyIovecs: an iovec list longer than MaxIovecs.
	ErrTooManyIovecs = errors.New("md: too many iovecs")
	// ErrTooLarge: a memory whose total length does not fit in 64 bits, or an Alloc size
	// that cannot be mapped.
	ErrTooLarge = errors.New("md: memory too large")
	// ErrBadSize: Alloc of zero or a negative number of bytes.
	ErrBadSize = errors.New("md: allocation size must be positive")
	// ErrFreed: Free of an allocation already freed.
	ErrFreed = errors.New("md: allocation already freed")
	// ErrNoMemory: the kernel refused to map the memory of an Alloc.
	ErrNoMemory = errors.New("md: cannot map memory")
	// ErrNotSupported: the platform lacks what the call needs (Alloc off Linux).
	ErrNotSupported = ptlerr.ErrNotSupported
	// ErrClosed: the registry was closed.
	ErrClosed = errors.New("md: registry closed")
	// ErrBusy: Close of a registry that still has pinned ranges outstanding.
	ErrBusy = errors.New("md: registry has pinned ranges outstanding")
	// ErrNotPinned: Release of a Pinned released already (or never pinned).
	ErrNotPinned = errors.New("md: not pinned (released twice or never pinned)")
	// ErrPinnedInUse: PinInto a Pinned that still holds registrations.
	ErrPinnedInUse = errors.New("md: Pinned still holds registrations")
	// ErrBadArgument: a nil protection domain, an invalid access set or a nil Pinned.
	ErrBadArgument = errors.New("md: invalid argument")
)

// RangeError reports an access to [Off, Off+N) of a memory of Len bytes that does not
// lie inside it. It matches ErrOutOfRange with errors.Is.
type RangeError struct {
	// Op names the call ("read", "write", "slices", "pin").
	Op string
	// Off and N give the range asked for; Len is the length of the memory.
	Off, N, Len uint64
}

// Error formats the error as "md: op [off,+n) outside memory of len bytes".
func (e *RangeError) Error() string {
	return fmt.Sprintf("md: %s [%d,+%d) outside memory of %d bytes", e.Op, e.Off, e.N, e.Len)
}

// Is makes errors.Is(err, ErrOutOfRange) match.
func (e *RangeError) Is(target error) bool { return target == ErrOutOfRange }

// checkRange returns a *RangeError unless [off, off+n) lies inside [0, size).
func checkRange(op string, off, n, size uint64) error {
	if off > size || n > size-off {
		return &RangeError{Op: op, Off: off, N: n, Len: size}
	}
	return nil
}
