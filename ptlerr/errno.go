package ptlerr

import (
	"errors"
	"strconv"
)

// Errno is a Portals return code, with the numeric values of portals4.h. Every error the
// API returns is an *OpError whose Errno matches one of these with errors.Is.
type Errno int

// The Portals 4 return codes.
const (
	OK            Errno = iota // PTL_OK: success (never returned as an error)
	ArgInvalid                 // PTL_ARG_INVALID: an argument is invalid
	CTNoneReached              // PTL_CT_NONE_REACHED: no counting event reached its test in time
	EQDropped                  // PTL_EQ_DROPPED: events were dropped before the one returned
	EQEmpty                    // PTL_EQ_EMPTY: no event in time
	Fail                       // PTL_FAIL: the operation failed
	Ignored                    // PTL_IGNORED: the call had no effect
	InUse                      // PTL_IN_USE: the object is still in use
	Interrupted                // PTL_INTERRUPTED: the wait ended because the object was freed
	ListTooLong                // PTL_LIST_TOO_LONG: the list reached max_list_size
	NoInit                     // PTL_NO_INIT: Init was not called
	NoSpace                    // PTL_NO_SPACE: a limit was reached
	PIDInUse                   // PTL_PID_IN_USE: the requested PID is taken
	PTFull                     // PTL_PT_FULL: no free portal table entry
	PTEQNeeded                 // PTL_PT_EQ_NEEDED: flow control needs an event queue
	PTInUse                    // PTL_PT_IN_USE: the portal table entry is allocated
)

var errnoNames = [...]string{"PTL_OK", "PTL_ARG_INVALID", "PTL_CT_NONE_REACHED", "PTL_EQ_DROPPED",
	"PTL_EQ_EMPTY", "PTL_FAIL", "PTL_IGNORED", "PTL_IN_USE", "PTL_INTERRUPTED", "PTL_LIST_TOO_LONG",
	"PTL_NO_INIT", "PTL_NO_SPACE", "PTL_PID_IN_USE", "PTL_PT_FULL", "PTL_PT_EQ_NEEDED", "PTL_PT_IN_USE"}

// Error returns the C name of the code.
func (e Errno) Error() string {
	if e >= 0 && int(e) < len(errnoNames) {
		return errnoNames[e]
	}
	return "PTL_ERRNO(" + strconv.Itoa(int(e)) + ")"
}

// ParseErrno returns the code named s ("PTL_ARG_INVALID" or "ARG_INVALID").
func ParseErrno(s string) (Errno, bool) {
	for i, n := range errnoNames {
		if s == n || "PTL_"+s == n {
			return Errno(i), true
		}
	}
	return 0, false
}

// ErrNotSupported marks a feature goportals does not provide (for example the
// LONG_DOUBLE atomic types); it comes wrapped in an *OpError with Errno Fail or
// ArgInvalid.
var ErrNotSupported = errors.New("goportals: not supported")

// OpError is the error of one API call: Op names the call (e.g. "PtlPut"), Errno is
// the Portals code and Err, if not nil, the underlying cause.
type OpError struct {
	Op    string
	Errno Errno
	Err   error
}

// Error formats the error as "op: PTL_CODE: cause".
func (e *OpError) Error() string {
	s := e.Op + ": " + e.Errno.Error()
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the code and the cause, so errors.Is matches either.
func (e *OpError) Unwrap() []error {
	if e.Err == nil {
		return []error{e.Errno}
	}
	return []error{e.Errno, e.Err}
}

// ErrnoOf returns the Portals code of err: OK for nil, Fail for an error that
// carries none.
func ErrnoOf(err error) Errno {
	if err == nil {
		return OK
	}
	var e Errno
	if errors.As(err, &e) {
		return e
	}
	return Fail
}

// New returns the error of the call op: an *OpError with code and, when not nil,
// the underlying cause.
func New(op string, code Errno, cause error) error {
	return &OpError{Op: op, Errno: code, Err: cause}
}
