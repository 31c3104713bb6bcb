package driverhooks

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"
)

// pageSize is the granularity of watched ranges.
var pageSize = uintptr(os.Getpagesize())

// PageSize returns the page size the notifier works in.
func PageSize() uintptr { return pageSize }

// Subscription is one consumer's view of the invalidations (a pin cache holds one).
// Pending and Drain implement the sequence protocol described in the package documentation.
type Subscription interface {
	// Pending reports whether invalidations may have arrived since the last Drain. It
	// takes no lock and allocates nothing; a false answer means every change whose
	// unmapping call returned before Pending was called has been drained already.
	Pending() bool
	// Drain waits for any read in flight to finish, then calls invalidate for every
	// range reported since the previous Drain. all reports that ranges were lost (the
	// consumer fell behind, or the monitor closed): the caller must then drop
	// everything it trusted. Calls must be serialized by the caller.
	Drain(invalidate func(start, end uintptr)) (all bool)
	// Close stops the subscription; it must not be used afterwards.
	Close()
}

// Source is what a pin cache needs from the notifier: watching ranges and a
// subscription to their invalidations. *Notifier implements it; tests use fakes.
type Source interface {
	// Watch starts watching [addr, addr+length) (page-aligned). An error matching
	// ErrNotSupported means the range cannot be watched: the caller must not cache it.
	// Watches are counted: overlapping watches by several callers are fine.
	Watch(addr, length uintptr) error
	// Unwatch ends one successful Watch of the same range.
	Unwatch(addr, length uintptr) error
	// Subscribe returns a new subscription.
	Subscribe() Subscription
}

// maxPendingExplicit bounds the explicit invalidations queued per subscription; beyond
// it the subscription is told to flush everything.
const maxPendingExplicit = 4096

// span is a half-open address range.
type span struct{ start, end uintptr }

// Notifier joins a backend (which may be absent) with explicit invalidations and fans
// both out to subscriptions.
type Notifier struct {
	mon    Backend // nil: explicit hooks only
	monErr error   // why mon is nil

	mu   sync.Mutex
	subs map[*subscription]struct{}
}

// NewNotifier returns a notifier over the backend b (a *Monitor, or another
// backend from OpenBackend). b may be nil: the notifier then only carries explicit
// invalidations and Watch fails with an error matching ErrNotSupported.
func NewNotifier(b Backend) *Notifier {
	if m, ok := b.(*Monitor); ok && m == nil {
		b = nil
	}
	n := &Notifier{mon: b, subs: make(map[*subscription]struct{})}
	if b == nil {
		n.monErr = &OpError{Op: "watch", Err: ErrNotSupported, Cause: fmt.Errorf("no notifier backend (explicit invalidations only)")}
	}
	return n
}

// Kind names the backend in use (KindExplicit when there is none).
func (n *Notifier) Kind() Kind {
	if n.mon == nil {
		return KindExplicit
	}
	return n.mon.Kind()
}

// Guarantee says in one line what a cache hit is worth with this notifier.
func (n *Notifier) Guarantee() string {
	if n.mon == nil {
		return Guarantee(KindExplicit, false)
	}
	return Guarantee(n.mon.Kind(), n.mon.Window())
}

// Backend returns the backend, or nil.
func (n *Notifier) Backend() Backend { return n.mon }

// Monitor returns the userfaultfd monitor when that is the backend, or nil.
func (n *Notifier) Monitor() *Monitor {
	m, _ := n.mon.(*Monitor)
	return m
}

// Watch watches [addr, addr+length) through the monitor.
func (n *Notifier) Watch(addr, length uintptr) error {
	if n.mon == nil {
		return n.monErr
	}
	return n.mon.Watch(addr, length)
}

// Unwatch stops watching [addr, addr+length).
func (n *Notifier) Unwatch(addr, length uintptr) error {
	if n.mon == nil {
		return nil
	}
	return n.mon.Unwatch(addr, length)
}

// Invalidate reports that the pages of [addr, addr+length) change or changed, for
// memory the user manages by other means and for memory the library maps itself
// (call it before freeing). When it returns, every subscription's next Pending is
// true and its next Drain reports the range. It never deregisters anything itself.
func (n *Notifier) Invalidate(addr, length uintptr) {
	if length == 0 {
		return
	}
	end := addr + length
	if end < addr {
		end = ^uintptr(0)
	}
	n.mu.Lock()
	for s := range n.subs {
		s.push(addr, end)
	}
	n.mu.Unlock()
}

// Subscribe returns a new subscription to the monitor's events and to explicit
// invalidations.
func (n *Notifier) Subscribe() Subscription {
	s := &subscription{n: n, mon: n.mon}
	if s.mon != nil {
		seq, head, ok := s.mon.attach()
		if ok {
			s.cursor = head
			s.drainedSeq.Store(seq)
		} else {
			// The monitor is closed: nothing can be trusted, say so at once.
			s.mon = nil
			s.overflow = true
			s.gen.Store(1)
		}
	}
	n.mu.Lock()
	n.subs[s] = struct{}{}
	n.mu.Unlock()
	return s
}

// subscription implements Subscription.
type subscription struct {
	n   *Notifier
	mon Backend

	drainedSeq atomic.Uint64 // monitor seq caught up with by the last Drain
	gen        atomic.Uint64 // explicit invalidations pushed
	drainedGen atomic.Uint64 // explicit invalidations drained
	cursor     uint64        // next ring index (Drain only)

	mu       sync.Mutex
	pend     []span
	spare    []span
	overflow bool
	closed   bool
}

func (s *subscription) push(start, end uintptr) {
	s.mu.Lock()
	if len(s.pend) >= maxPendingExplicit {
		s.overflow = true
		s.pend = s.pend[:0]
	} else {
		s.pend = append(s.pend, span{start, end})
	}
	s.gen.Add(1)
	s.mu.Unlock()
}

// Pending implements Subscription.
func (s *subscription) Pending() bool {
	if s.gen.Load() != s.drainedGen.Load() {
		return true
	}
	return s.mon != nil && s.mon.seq() != s.drainedSeq.Load()
}

// Drain implements Subscription.
func (s *subscription) Drain(fn func(start, end uintptr)) (all bool) {
	g := s.gen.Load()
	s.mu.Lock()
	p := s.pend
	s.pend = s.spare[:0]
	all = s.overflow
	s.overflow = false
	s.mu.Unlock()
	for _, r := range p {
		fn(r.start, r.end)
	}
	s.spare = p[:0]
	s.drainedGen.Store(g)
	if s.mon != nil && !s.closed {
		seq, lost := s.mon.drain(&s.cursor, fn)
		s.drainedSeq.Store(seq)
		all = all || lost
	}
	return all
}

// Close implements Subscription.
func (s *subscription) Close() {
	s.n.mu.Lock()
	_, live := s.n.subs[s]
	delete(s.n.subs, s)
	s.n.mu.Unlock()
	if live && s.mon != nil {
		s.closed = true
		s.mon.detach()
	}
}
