package bootstrap

import (
	"errors"
	"fmt"

	"github.com/goportals/goportals/ptlerr"
)

// Sentinel errors of the bootstrap calls. Every error returned by this package
// matches one of them with errors.Is (and context errors where a context ended).
var (
	// ErrNotSupported: the environment asks for a backend or feature that this
	// build does not implement (for example a PMI launcher).
	ErrNotSupported = ptlerr.ErrNotSupported
	// ErrBadEnv: the launcher's environment variables are missing or malformed.
	ErrBadEnv = errors.New("bootstrap: bad launcher environment")
	// ErrInvalidKey: a key is empty, longer than MaxKeyLen or holds a byte outside
	// the allowed set (see MaxKeyLen).
	ErrInvalidKey = errors.New("bootstrap: invalid key")
	// ErrValueTooLarge: a value is longer than MaxValueLen.
	ErrValueTooLarge = errors.New("bootstrap: value too large")
	// ErrBadRank: a rank outside [0, Size()).
	ErrBadRank = errors.New("bootstrap: rank out of range")
	// ErrNotFound: the key was not published by that rank at a completed Fence.
	ErrNotFound = errors.New("bootstrap: key not found")
	// ErrPeerLost: another rank of the job died (its connection closed without
	// Close, or its process failed) or already finished, so a collective can never
	// complete; once a rank died every later call fails with it.
	ErrPeerLost = errors.New("bootstrap: peer rank lost")
	// ErrLauncherLost: the connection to the launcher broke.
	ErrLauncherLost = errors.New("bootstrap: connection to launcher lost")
	// ErrAborted: a rank called Abort; the job is being torn down.
	ErrAborted = errors.New("bootstrap: job aborted")
	// ErrAuth: the launcher rejected the job key, or the rank was already connected.
	ErrAuth = errors.New("bootstrap: authentication failed")
	// ErrProtocol: a malformed or unexpected message on the wire, or ranks calling
	// different collectives (one Fence, another Barrier) at the same step.
	ErrProtocol = errors.New("bootstrap: protocol error")
	// ErrClosed: the Bootstrap (or Server) was closed.
	ErrClosed = errors.New("bootstrap: closed")
	// ErrRankFailed: a rank of a launched job exited non-zero or was killed by a signal.
	ErrRankFailed = errors.New("bootstrap: rank failed")
	// ErrTimeout: a launched job ran past its timeout.
	ErrTimeout = errors.New("bootstrap: job timed out")
	// ErrStart: a rank's program could not be started.
	ErrStart = errors.New("bootstrap: cannot start rank")
)

// OpError is the error of one bootstrap call: Op names the call ("put", "fence",
// "get", ...), Rank the rank it concerns (-1 when none) and Key the key (or "").
// Err matches one of the sentinel errors with errors.Is.
type OpError struct {
	Op   string
	Rank int
	Key  string
	Err  error
}

// Error formats the error as "bootstrap op rank=R key=K: err".
func (e *OpError) Error() string {
	s := "bootstrap " + e.Op
	if e.Rank >= 0 {
		s += fmt.Sprintf(" rank=%d", e.Rank)
	}
	if e.Key != "" {
		s += fmt.Sprintf(" key=%q", e.Key)
	}
	return s + ": " + e.Err.Error()
}

// Unwrap returns the underlying error so errors.Is matches the sentinels.
func (e *OpError) Unwrap() error { return e.Err }

// detail joins a sentinel and an explanation so that errors.Is matches the
// sentinel and the message says what happened.
type detail struct {
	kind error
	msg  string
}

func (d *detail) Error() string { return d.kind.Error() + ": " + d.msg }
func (d *detail) Unwrap() error { return d.kind }

// errDetail builds an error matching kind whose message adds the formatted text.
func errDetail(kind error, format string, args ...any) error {
	return &detail{kind: kind, msg: fmt.Sprintf(format, args...)}
}

// wrapped joins a sentinel and a cause so that errors.Is matches both, printed
// on one line as "kind: cause".
type wrapped struct{ kind, cause error }

func (w *wrapped) Error() string   { return w.kind.Error() + ": " + w.cause.Error() }
func (w *wrapped) Unwrap() []error { return []error{w.kind, w.cause} }

// wrapErr returns an error matching kind and cause (kind alone if cause is nil).
func wrapErr(kind, cause error) error {
	if cause == nil {
		return kind
	}
	return &wrapped{kind: kind, cause: cause}
}

// opErr wraps err (nil stays nil) into an *OpError unless it already is one.
func opErr(op string, rank int, key string, err error) error {
	if err == nil {
		return nil
	}
	var oe *OpError
	if errors.As(err, &oe) {
		return err
	}
	return &OpError{Op: op, Rank: rank, Key: key, Err: err}
}
