package nic

import "github.com/goportals/goportals/ptlerr"

// Errno is a Portals return code (package ptlerr).
type Errno = ptlerr.Errno

// OpError is the error of one call (package ptlerr).
type OpError = ptlerr.OpError

// The Portals 4 return codes.
const (
	OK            = ptlerr.OK
	ArgInvalid    = ptlerr.ArgInvalid
	CTNoneReached = ptlerr.CTNoneReached
	EQDropped     = ptlerr.EQDropped
	EQEmpty       = ptlerr.EQEmpty
	Fail          = ptlerr.Fail
	Ignored       = ptlerr.Ignored
	InUse         = ptlerr.InUse
	Interrupted   = ptlerr.Interrupted
	ListTooLong   = ptlerr.ListTooLong
	NoInit        = ptlerr.NoInit
	NoSpace       = ptlerr.NoSpace
	PIDInUse      = ptlerr.PIDInUse
	PTFull        = ptlerr.PTFull
	PTEQNeeded    = ptlerr.PTEQNeeded
	PTInUse       = ptlerr.PTInUse
)

// ErrNotSupported marks a feature the library does not provide.
var ErrNotSupported = ptlerr.ErrNotSupported

// ErrnoOf returns the Portals code of err.
func ErrnoOf(err error) Errno { return ptlerr.ErrnoOf(err) }

// ParseErrno returns the code named s.
func ParseErrno(s string) (Errno, bool) { return ptlerr.ParseErrno(s) }

func opErr(op string, code Errno, cause error) error {
	return &OpError{Op: op, Errno: code, Err: cause}
}
