package driverhooks

import (
	"fmt"
	"strings"
	"sync"

	"github.com/goportals/goportals/internal/envknob"
)

// Kind names a notifier backend: the kernel channel that tells the notifier which
// memory changed.
type Kind string

// The backends, strongest first.
const (
	// KindEBPF: programs on the syscall-entry tracepoints of munmap, mremap, madvise,
	// MAP_FIXED mmap, brk and shmdt record the range and bump a counter in the
	// unmapping thread before the call does anything. No window. Needs CAP_BPF and
	// CAP_PERFMON.
	KindEBPF Kind = "ebpf"
	// KindSeccomp: a seccomp user-notification filter stops the same calls until a
	// supervisor thread has recorded the range and bumped the counter. No window,
	// no privileges; costs a round trip per unmapping call.
	KindSeccomp Kind = "seccomp"
	// KindUffd: userfaultfd events on watched ranges. REMOVE (madvise) is reported
	// before the pages go, but UNMAP only after munmap has released the range: another
	// thread that maps new memory at the same address in between can be handed a
	// stale registration (a window).
	KindUffd Kind = "uffd"
	// KindExplicit: no kernel channel; only explicit Invalidate calls. Nothing is
	// watched, so the pin cache registers per operation.
	KindExplicit Kind = "explicit"
)

// Backend is one kernel channel that reports changes to memory: Monitor
// (userfaultfd) and the eBPF and seccomp notifiers implement it. It publishes ranges
// into a broadcast ring and a sequence word that changes when it records one; the
// sequence protocol (Pending, Drain) of Subscription runs over it.
type Backend interface {
	// Kind names the backend.
	Kind() Kind
	// Window reports whether an unmapping call can return before the backend has
	// recorded it (true for userfaultfd's UNMAP): then a cache hit after another
	// thread remapped the address may be stale.
	Window() bool
	// Watch starts watching [addr, addr+length) (page-aligned); an error matching
	// ErrNotSupported means the range cannot be watched. Watches are counted.
	Watch(addr, length uintptr) error
	// Unwatch ends one successful Watch of the same range.
	Unwatch(addr, length uintptr) error
	// Close stops the backend; its subscribers are told to flush everything.
	Close() error

	// seq loads the sequence word: it changes whenever a range is recorded.
	seq() uint64
	// attach registers a ring consumer and returns where it starts; ok is false once
	// the backend is closed.
	attach() (seq, head uint64, ok bool)
	// detach forgets a ring consumer.
	detach()
	// drain hands every range published after *cursor to fn and returns the sequence
	// word caught up with; all reports lost ranges (flush everything).
	drain(cursor *uint64, fn func(start, end uintptr)) (seq uint64, all bool)
}

// openers holds the backends this build can open; platform files add theirs in init.
var openers = map[Kind]func() (Backend, error){}

// autoOrder is the order auto selection tries, strongest first. It leaves out
// seccomp: its filter cannot be removed and is inherited by every process started
// afterwards, which then fails its unmapping calls with ENOSYS once this process has
// exited, and children cannot open a notifier of their own. A program that knows it
// starts no long-lived children asks for it with PTL_NOTIFIER=seccomp.
var autoOrder = []Kind{KindEBPF, KindUffd}

// EnvNotifier names the environment variable that selects the backend.
const EnvNotifier = string(envknob.Notifier)

// ParseKind parses a PTL_NOTIFIER value: auto (or empty), ebpf, seccomp, uffd or
// explicit. auto returns the empty Kind: the strongest of ebpf and uffd that opens
// (seccomp only when asked for by name).
func ParseKind(s string) (Kind, error) {
	switch k := Kind(strings.ToLower(strings.TrimSpace(s))); k {
	case "", "auto":
		return "", nil
	case KindEBPF, KindSeccomp, KindUffd, KindExplicit:
		return k, nil
	}
	return "", fmt.Errorf("driverhooks: %s=%q: want auto, ebpf, seccomp, uffd or explicit", EnvNotifier, s)
}

// OpenBackend opens the backend k, or for the empty Kind the strongest one that
// opens here. KindExplicit returns a nil Backend and no error. A backend this build
// or machine lacks returns an error matching ErrNotSupported that says why.
func OpenBackend(k Kind) (Backend, error) {
	if k == KindExplicit {
		return nil, nil
	}
	if k != "" {
		open, ok := openers[k]
		if !ok {
			return nil, &OpError{Op: "open " + string(k), Err: ErrNotSupported, Cause: fmt.Errorf("not built into this binary")}
		}
		return open()
	}
	var why []string
	for _, k := range autoOrder {
		open, ok := openers[k]
		if !ok {
			continue
		}
		b, err := open()
		if err == nil {
			return b, nil
		}
		why = append(why, string(k)+": "+err.Error())
	}
	return nil, &OpError{Op: "open", Err: ErrNotSupported, Cause: fmt.Errorf("no backend opens: %s", strings.Join(why, "; "))}
}

// Guarantee describes in one line what a cache hit is worth with this backend.
func Guarantee(k Kind, window bool) string {
	switch {
	case k == KindExplicit || k == "":
		return "none: memory is not watched, registrations are made per operation"
	case window:
		return "window: an unmap is reported only after the pages are released; a thread that remaps the address meanwhile can be handed a stale registration"
	}
	return "no window: every unmap is recorded before the pages are released"
}

var (
	defaultOnce     sync.Once
	defaultNotifier *Notifier
	defaultErr      error
)

// Default returns the process-wide notifier, opening its backend on first use as
// PTL_NOTIFIER says (auto: the strongest that opens). When no backend can be opened,
// the notifier still carries explicit invalidations and DefaultErr says why Watch
// fails.
func Default() *Notifier {
	defaultOnce.Do(func() {
		k, err := ParseKind(envknob.Get(envknob.Notifier))
		var b Backend
		if err == nil {
			b, err = OpenBackend(k)
		}
		defaultNotifier = NewNotifier(b)
		if err != nil {
			defaultErr = err
			defaultNotifier.monErr = err
		} else if b == nil {
			defaultErr = defaultNotifier.monErr
		}
	})
	return defaultNotifier
}

// DefaultErr returns why the process-wide notifier watches nothing, or nil.
func DefaultErr() error {
	Default()
	return defaultErr
}
