package driverhooks

import (
	"errors"
	"fmt"

	"github.com/goportals/goportals/ptlerr"
)

// ErrNotSupported reports that the notifier cannot watch memory here: no cgo, no
// userfaultfd, or a range userfaultfd refuses. Callers match it with errors.Is and fall
// back to uncached, per-operation registration; they never trust unwatched memory.
var ErrNotSupported = ptlerr.ErrNotSupported

// The specific reasons, each matching ErrNotSupported with errors.Is as well.
var (
	// ErrNoCgo: the package was built without cgo, so the reader thread cannot exist.
	ErrNoCgo = fmt.Errorf("built without cgo, no userfaultfd reader: %w", ErrNotSupported)
	// ErrPermission: userfaultfd(2) was refused (EPERM: seccomp, sysctl or capabilities).
	ErrPermission = fmt.Errorf("userfaultfd refused (EPERM): %w", ErrNotSupported)
	// ErrNoKernel: the kernel lacks userfaultfd or the needed events (ENOSYS, EINVAL on UFFDIO_API).
	ErrNoKernel = fmt.Errorf("kernel lacks userfaultfd with unmap/remove/remap events: %w", ErrNotSupported)
	// ErrBusy: another userfaultfd already watches part of the range (EBUSY).
	ErrBusy = fmt.Errorf("range watched by another userfaultfd (EBUSY): %w", ErrNotSupported)
	// ErrUnwatchable: the mapping cannot be registered (EINVAL: file-backed, shared or
	// special mapping).
	ErrUnwatchable = fmt.Errorf("mapping cannot be watched (EINVAL: file-backed or special): %w", ErrNotSupported)
	// ErrClosed: the monitor was closed.
	ErrClosed = fmt.Errorf("monitor closed: %w", ErrNotSupported)
)

// ErrNotMapped reports that part of the range is not mapped (ENOMEM): a bad address,
// not a missing feature.
var ErrNotMapped = errors.New("driverhooks: range not mapped")

// ErrBadRange reports a zero-length or overflowing range.
var ErrBadRange = errors.New("driverhooks: invalid range")

// OpError is the error of one monitor operation on a range.
type OpError struct {
	// Op names the operation ("open", "watch", "unwatch", "pagemap").
	Op string
	// Addr and Len give the range, when there is one.
	Addr, Len uintptr
	// Err is one of the sentinel errors above.
	Err error
	// Cause is the system error behind it, if any.
	Cause error
}

// Error formats the error as "driverhooks: op [addr+len]: err (cause)".
func (e *OpError) Error() string {
	s := "driverhooks: " + e.Op
	if e.Len != 0 {
		s += fmt.Sprintf(" [%#x+%#x]", e.Addr, e.Len)
	}
	s += ": " + e.Err.Error()
	if e.Cause != nil {
		s += " (" + e.Cause.Error() + ")"
	}
	return s
}

// Unwrap returns the sentinel and the cause so errors.Is matches either.
func (e *OpError) Unwrap() []error {
	if e.Cause == nil {
		return []error{e.Err}
	}
	return []error{e.Err, e.Cause}
}
