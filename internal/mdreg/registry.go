package mdreg

import (
	"errors"
	"fmt"
	"sync/atomic"
	"unsafe"

	"github.com/goportals/goportals/internal/verbs"
	"github.com/goportals/goportals/md"
	"github.com/goportals/goportals/regcache"
)

// closedBit marks a closed registry in Registry.state; the low bits count live pins.
const closedBit = 1 << 62

// Registry hands the protocol engine registrations of bound memory through a pin cache
// (regcache): one registry per network interface, that is per protection domain and
// access set. Registrations are taken lazily, when an operation needs them, and stay
// cached across operations until the pages change or the cache evicts them.
//
// A Registry is safe for concurrent use. It does not own the protection domain: close
// the registry (after releasing every Pinned) before the PD.
type Registry struct {
	cache *regcache.Cache[verbs.MR]
	// state counts Pinned values holding registrations; closedBit marks Close.
	state atomic.Int64
}

// NewRegistry returns a registry that registers memory in pd with the given access
// rights, through a pin cache configured by opts (see regcache.Options and its
// environment knobs). Errors: ErrBadArgument for a nil pd or an invalid access set,
// and the errors of regcache.New.
func NewRegistry(pd verbs.PD, access verbs.Access, opts regcache.Options) (*Registry, error) {
	if pd == nil {
		return nil, fmt.Errorf("%w: nil protection domain", ErrBadArgument)
	}
	if err := access.Validate(); err != nil {
		return nil, fmt.Errorf("%w: access %v: %w", ErrBadArgument, access, err)
	}
	c, err := regcache.New(VerbsRegistrar(pd, access), opts)
	if err != nil {
		return nil, fmt.Errorf("md: new registry: %w", err)
	}
	return &Registry{cache: c}, nil
}

// Pin returns the registrations covering [off, off+n) of m: one pin-cache Acquire per
// contiguous piece of the range. The Pinned must be released exactly once. While it is
// held, the memory stays registered and Go memory behind it stays alive (the Pinned
// references every piece), even if nothing else does. n == 0 returns an empty Pinned
// that holds no registration. Errors: a *RangeError (ErrOutOfRange), ErrClosed, and
// the pin cache's errors (memory that cannot be pinned under RLIMIT_MEMLOCK even after
// the cache evicted what it could is a *regcache.MemlockError matching
// verbs.ErrMemlock); on error nothing stays held.
func (r *Registry) Pin(m md.Memory, off, n uint64) (*Pinned, error) {
	p := new(Pinned)
	if err := r.PinInto(p, m, off, n); err != nil {
		return nil, err
	}
	return p, nil
}

// PinInto is Pin into a caller-owned Pinned, for operation descriptors that are reused:
// it allocates nothing when the range is one piece (or p's storage has room) and every
// registration is a cache hit. p must not hold registrations (ErrPinnedInUse): a new
// Pinned, or one released already.
func (r *Registry) PinInto(p *Pinned, m md.Memory, off, n uint64) error {
	if p == nil {
		return fmt.Errorf("%w: nil Pinned", ErrBadArgument)
	}
	if p.state.Load() == pinLive {
		return ErrPinnedInUse
	}
	if off > m.Len() || n > m.Len()-off {
		return &md.RangeError{Op: "pin", Off: off, N: n, Len: m.Len()}
	}
	if r.state.Load()&closedBit != 0 {
		return ErrClosed
	}
	p.reset()
	p.n = n
	if n == 0 {
		p.state.Store(pinLive)
		return nil
	}
	if r.state.Add(1)&closedBit != 0 {
		r.state.Add(-1)
		return ErrClosed
	}
	// The pieces of the transfer alone (for raw memory, only these bytes must be
	// addressable; Slices checks them).
	var err error
	p.slices, err = m.Slices(off, n, p.slices[:0])
	if err != nil {
		p.reset()
		r.state.Add(-1)
		return err
	}
	done := uint64(0)
	for _, s := range p.slices {
		reg, err := r.cache.Acquire(s)
		if err != nil {
			addr := uintptr(unsafe.Pointer(unsafe.SliceData(s)))
			err = fmt.Errorf("md: pin [%#x,+%d) (offset %d of the memory): %w", addr, len(s), off+done, err)
			if rerr := r.releasePieces(p); rerr != nil {
				err = errors.Join(err, rerr)
			}
			p.reset()
			r.state.Add(-1)
			return err
		}
		p.pieces = append(p.pieces, pinPiece{
			ptr: unsafe.Pointer(unsafe.SliceData(s)),
			n:   uint64(len(s)),
			reg: reg,
		})
		done += uint64(len(s))
	}
	clear(p.slices)
	p.r = r
	p.state.Store(pinLive)
	return nil
}

// releasePieces releases every registration p holds.
func (r *Registry) releasePieces(p *Pinned) error {
	var errs []error
	for i := range p.pieces {
		if err := r.cache.Release(p.pieces[i].reg); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Outstanding returns the number of Pinned values of this registry that hold
// registrations (not yet released). Empty Pinned values are not counted.
func (r *Registry) Outstanding() int { return int(r.state.Load() &^ closedBit) }

// Stats returns the pin cache's counters, limits and notifier, and the process's
// locked memory (see regcache.Stats).
func (r *Registry) Stats() regcache.Stats { return r.cache.Stats() }

// Close closes the pin cache and deregisters everything it holds. It fails with ErrBusy
// (and closes nothing) while Pinned values are outstanding; a second Close returns
// ErrClosed. Pin then fails with ErrClosed.
func (r *Registry) Close() error {
	for {
		v := r.state.Load()
		if v&closedBit != 0 {
			return ErrClosed
		}
		if v != 0 {
			return fmt.Errorf("%w: %d pinned", ErrBusy, v)
		}
		if r.state.CompareAndSwap(0, closedBit) {
			break
		}
	}
	return r.cache.Close()
}
