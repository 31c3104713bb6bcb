package regcache

import (
	"errors"
	"fmt"
	"math/bits"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/goportals/goportals/driverhooks"
)

// Errors returned by the cache.
var (
	// ErrClosed: the cache was closed.
	ErrClosed = errors.New("regcache: cache closed")
	// ErrNotAcquired: Release of a region that has no holder left (a double release).
	ErrNotAcquired = errors.New("regcache: region released more often than acquired")
	// ErrEmpty: Acquire of an empty range.
	ErrEmpty = errors.New("regcache: empty memory range")
	// ErrBadEnv: an environment knob has an unusable value (see EnvError).
	ErrBadEnv = errors.New("regcache: bad environment setting")
	// ErrNoRegistrar: New without a registrar.
	ErrNoRegistrar = errors.New("regcache: nil registrar")
)

// Registrar registers and deregisters memory; the cache calls it on misses, evictions
// and invalidations. mem is always a whole number of pages.
type Registrar[R any] interface {
	// Register pins mem and returns its registration.
	Register(mem []byte) (R, error)
	// Deregister unpins a registration returned by Register.
	Deregister(reg R) error
}

// Options configure a cache. Zero fields take the environment knobs (see the package
// documentation) and then the defaults.
type Options struct {
	// MaxEntries bounds the cached entries (default DefaultMaxEntries).
	MaxEntries int
	// MaxBytes bounds the pinned bytes of cached entries (default DefaultMaxBytes);
	// RLIMIT_MEMLOCK lowers it unless the process holds CAP_IPC_LOCK.
	MaxBytes uint64
	// Disable turns caching off: every Acquire registers, every Release deregisters.
	Disable bool
	// CheckPFN turns on the page-frame oracle (also on with PTL_CHECK_PFN=1): page
	// frames are recorded at registration and compared on every hit.
	CheckPFN bool
	// Source is the notifier (nil: driverhooks.Default()).
	Source driverhooks.Source
	// OnStale, if set, is called (outside the cache lock) for each stale hit the
	// oracle finds, with the range and the number of changed pages.
	OnStale func(addr, length uintptr, pages int)
}

var (
	pageSize  = driverhooks.PageSize()
	pageShift = uint(bits.TrailingZeros64(uint64(pageSize)))
)

// Cache is an LRU pin cache of registrations of type R. It is safe for concurrent
// use. A hit (lookaside slot, no pending invalidation) takes no lock and allocates
// nothing. Every Acquire must be paired with exactly one Release of the returned Region.
type Cache[R any] struct {
	reg      Registrar[R]
	src      driverhooks.Source
	sub      driverhooks.Subscription
	lim      limits
	disabled bool
	oracle   *driverhooks.PFNOracle
	onStale  func(addr, length uintptr, pages int)
	closed   atomic.Bool

	mu           sync.Mutex
	idx          *index[R]
	lru          *lru[R]
	victims      []*Region[R] // detached unused entries to deregister after unlocking
	invalidateFn func(start, end uintptr)

	st counters
}

// New returns a cache over reg. It fails with an *EnvError for a bad environment knob
// and with an error matching driverhooks.ErrNotSupported when PFN checking is asked
// for but page frames cannot be read.
func New[R any](reg Registrar[R], opts Options) (*Cache[R], error) {
	if reg == nil {
		return nil, ErrNoRegistrar
	}
	if err := applyEnv(&opts); err != nil {
		return nil, err
	}
	if opts.MaxEntries <= 0 {
		opts.MaxEntries = DefaultMaxEntries
	}
	if opts.MaxBytes == 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	maxBytes, memlock := effectiveMaxBytes(opts.MaxBytes)
	c := &Cache[R]{
		reg:      reg,
		src:      opts.Source,
		lim:      limits{maxEntries: opts.MaxEntries, maxBytes: maxBytes, memlock: memlock},
		disabled: opts.Disable,
		onStale:  opts.OnStale,
		idx:      newIndex[R](),
		lru:      newLRU[R](),
	}
	if c.src == nil {
		c.src = driverhooks.Default()
	}
	if opts.CheckPFN || driverhooks.CheckPFNEnabled() {
		o, err := driverhooks.OpenPFNOracle()
		if err != nil {
			return nil, fmt.Errorf("regcache: %s=1 asked for the page-frame oracle: %w", driverhooks.CheckPFNEnv, err)
		}
		c.oracle = o
	}
	c.invalidateFn = c.invalidateLocked
	c.sub = c.src.Subscribe()
	addCache(c)
	return c, nil
}

// Acquire returns a registration covering mem, from the cache when an entry contains
// it, otherwise a new page-granular registration merged with the entries it overlaps.
// Memory the notifier cannot watch (and everything when the cache is disabled or its
// limits cannot be met) gets an uncached per-operation registration instead.
func (c *Cache[R]) Acquire(mem []byte) (*Region[R], error) {
	if len(mem) == 0 {
		return nil, ErrEmpty
	}
	addr := uintptr(unsafe.Pointer(unsafe.SliceData(mem)))
	end := addr + uintptr(len(mem))
	if !c.closed.Load() && !c.sub.Pending() {
		if e := c.idx.fast(addr, end); e != nil && e.tryRef() {
			if c.oracle == nil || c.verify(e, addr, end) {
				c.st.hits.Add(1)
				return e, nil
			}
		}
	}
	return c.acquireSlow(mem, addr, end)
}

func (c *Cache[R]) acquireSlow(mem []byte, addr, end uintptr) (*Region[R], error) {
	if c.disabled {
		return c.uncached(mem, addr, end)
	}
	reclaims := 0
	for attempt := 0; attempt < 4; {
		c.mu.Lock()
		if c.closed.Load() {
			c.mu.Unlock()
			return nil, ErrClosed
		}
		c.syncLocked()
		if e := c.idx.find(addr, end); e != nil && e.tryRef() {
			c.idx.remember(addr, e)
			c.unlock()
			if c.oracle != nil && !c.verify(e, addr, end) {
				attempt++
				continue
			}
			c.st.hits.Add(1)
			return e, nil
		}
		e, next, err := c.insertLocked(mem, addr, end)
		var re *registerError
		if next == nextDone && errors.As(err, &re) && isMemlock(re.err) && reclaims < maxReclaims {
			// The memlock limit refused the registration: evict unused entries (the
			// first round enough for this one, then all of them) and try again.
			need := uint64(re.end - re.start)
			if reclaims > 0 {
				need = ^uint64(0)
			}
			reclaims++
			freed := c.evictUnusedLocked(need)
			c.unlock()
			if freed == 0 {
				freed = reclaimOthers(c, need)
			}
			if freed > 0 {
				c.st.memlockRetries.Add(1)
				continue
			}
			// Nothing left to evict: pin the transfer's own pages, uncached (a
			// merged registration may have been larger).
			return c.uncached(mem, addr, end)
		}
		c.unlock()
		switch next {
		case nextRetry:
			attempt++
			continue
		case nextUncached:
			return c.uncached(mem, addr, end)
		}
		return e, err
	}
	// The range kept changing while we registered it: do not cache it.
	return c.uncached(mem, addr, end)
}

// maxReclaims bounds the evict-and-retry rounds of one Acquire after memlock
// refusals.
const maxReclaims = 2

// evictUnusedLocked evicts unused entries, oldest first, until need bytes are freed
// (at least one entry if there is one); they are deregistered when the lock is
// released. It returns the bytes evicted.
func (c *Cache[R]) evictUnusedLocked(need uint64) uint64 {
	freed := uint64(0)
	for freed < need || freed == 0 {
		v := c.lru.victim()
		if v == nil {
			break
		}
		c.idx.remove(v)
		_ = c.src.Unwatch(v.start, v.end-v.start)
		c.victims = append(c.victims, v)
		c.st.evictions.Add(1)
		freed += uint64(v.end - v.start)
	}
	return freed
}

// reclaimUnused implements reclaimer: another cache of the process was refused for
// the memlock limit.
func (c *Cache[R]) reclaimUnused(need uint64) uint64 {
	c.mu.Lock()
	freed := c.evictUnusedLocked(need)
	c.unlock()
	return freed
}

// reclaim frees up to need bytes of unused entries for a registration the memlock
// limit refused: this cache's first, the process's other caches' if it has none.
func (c *Cache[R]) reclaim(need uint64) uint64 {
	if freed := c.reclaimUnused(need); freed > 0 {
		return freed
	}
	return reclaimOthers(c, need)
}

// memlockError describes a registration of [start, end) that the memlock limit
// refused for good.
func (c *Cache[R]) memlockError(start, end uintptr, err error) error {
	e := &MemlockError{Addr: start, Len: end - start, CacheMax: c.lim.maxBytes, Err: err}
	if l, lerr := ReadLockedMemory(); lerr == nil {
		e.Locked, e.LockedKnown = l, true
	}
	if p := c.st.pinned.Load(); p > 0 {
		e.CacheBytes = uint64(p)
	}
	if lim, ok := memlockLimit(); ok {
		e.Limit, e.Exempt = lim, hasIPCLock()
	}
	return e
}

// unlock releases the lock and deregisters the entries evicted or invalidated under it.
func (c *Cache[R]) unlock() {
	v := c.victims
	c.victims = nil
	c.mu.Unlock()
	for _, e := range v {
		c.finalize(e, false)
	}
}

// syncLocked applies the invalidations reported since the last drain.
func (c *Cache[R]) syncLocked() {
	if !c.sub.Pending() {
		return
	}
	if all := c.sub.Drain(c.invalidateFn); all {
		c.flushLocked(true)
	}
}

// invalidateLocked drops every entry overlapping [start, end).
func (c *Cache[R]) invalidateLocked(start, end uintptr) {
	for _, e := range c.idx.overlapping(start, end) {
		c.dropLocked(e, true)
		c.st.invalidations.Add(1)
	}
}

// flushLocked drops every entry.
func (c *Cache[R]) flushLocked(stale bool) {
	for _, e := range c.idx.all() {
		c.dropLocked(e, stale)
		if stale {
			c.st.invalidations.Add(1)
		}
	}
}

// dropLocked takes e out of the index, the LRU and the notifier; an unused e is
// deregistered after unlocking, an e in use on its last Release.
func (c *Cache[R]) dropLocked(e *Region[R], stale bool) {
	c.idx.remove(e)
	c.lru.remove(e)
	_ = c.src.Unwatch(e.start, e.end-e.start)
	if e.detach(stale) {
		c.victims = append(c.victims, e)
	}
}

// What insertLocked asks its caller to do next.
const (
	nextDone     = iota // return e, err
	nextRetry           // the range changed while it was registered: look again
	nextUncached        // register the range uncached (after unlocking)
)

// registerError is a registrar's refusal of [start, end).
type registerError struct {
	start, end uintptr
	err        error
}

func (e *registerError) Error() string {
	return fmt.Sprintf("regcache: register [%#x,%#x): %v", e.start, e.end, e.err)
}

func (e *registerError) Unwrap() error { return e.err }

// insertLocked registers a new entry for [addr, end), merged with the entries it
// overlaps; next says what the caller does after unlocking.
func (c *Cache[R]) insertLocked(mem []byte, addr, end uintptr) (e *Region[R], next int, err error) {
	start, pend := addr&^(pageSize-1), (end+pageSize-1)&^(pageSize-1)
	base := pageStart(mem, addr-start)

	// Make room first, then merge with what overlaps.
	freed := uint64(0)
	for c.lim.over(c.idx.len(), uint64(c.st.pinned.Load())-freed, uint64(pend-start)) {
		v := c.lru.victim()
		if v == nil {
			break
		}
		c.idx.remove(v)
		_ = c.src.Unwatch(v.start, v.end-v.start)
		c.victims = append(c.victims, v)
		c.st.evictions.Add(1)
		freed += uint64(v.end - v.start)
	}
	ov := c.idx.overlapping(start, pend)
	mstart, mend := start, pend
	for _, o := range ov {
		if o.start < mstart {
			mstart, base = o.start, o.base
		}
		mend = max(mend, o.end)
	}
	size := mend - mstart
	if c.lim.over(c.idx.len()-len(ov), uint64(c.st.pinned.Load())-freed, uint64(size)) {
		return nil, nextUncached, nil
	}
	if err := c.src.Watch(mstart, size); err != nil {
		if errors.Is(err, driverhooks.ErrNotSupported) {
			return nil, nextUncached, nil
		}
		return nil, nextDone, fmt.Errorf("regcache: acquire [%#x,%#x): %w", addr, end, err)
	}
	e = &Region[R]{start: mstart, end: mend, base: base, cached: true}
	e.objs = append(e.objs, unsafe.Pointer(unsafe.SliceData(mem)))
	for _, o := range ov {
		e.objs = append(e.objs, o.objs...)
		c.idx.remove(o)
		c.lru.remove(o)
		// Watches are counted: the union's watch now covers o's pages.
		_ = c.src.Unwatch(o.start, o.end-o.start)
		if o.detach(false) {
			c.victims = append(c.victims, o)
		}
		c.st.merges.Add(1)
	}
	reg, err := c.reg.Register(pageSlice(base, size))
	if err != nil {
		_ = c.src.Unwatch(mstart, size)
		return nil, nextDone, &registerError{mstart, mend, err}
	}
	e.reg = reg
	c.st.pinned.Add(int64(size))
	if c.oracle != nil {
		if e.pfn, err = c.oracle.Snapshot(mstart, size); err != nil {
			c.finalize(e, false)
			_ = c.src.Unwatch(mstart, size)
			return nil, nextDone, err
		}
	}
	e.ref.Store(1)
	c.idx.insert(e)
	c.idx.remember(addr, e)
	c.st.misses.Add(1)
	// Events that arrived while we registered may concern the new entry.
	c.syncLocked()
	if e.ref.Load()&refDetached != 0 {
		c.st.misses.Add(^uint64(0))
		c.victims = append(c.victims, e) // we hold its only reference
		return nil, nextRetry, nil
	}
	return e, nextDone, nil
}

// verify checks a hit against the page-frame oracle; on a mismatch it counts a stale
// hit, drops the entry and its reference, and returns false.
func (c *Cache[R]) verify(e *Region[R], addr, end uintptr) bool {
	bad, err := c.oracle.Verify(e.start, e.pfn, addr, end-addr)
	if err == nil && bad == 0 {
		return true
	}
	if bad > 0 {
		c.st.staleHits.Add(1)
		if c.onStale != nil {
			c.onStale(addr, end-addr, bad)
		}
	}
	c.mu.Lock()
	ours := false
	if got := c.idx.find(e.start, e.end); got == e {
		c.dropLocked(e, true)
		c.st.invalidations.Add(1)
		ours = true
	}
	c.unlock()
	// Drop the hit's reference; a stale entry we dropped ourselves is not a
	// stale-in-use release.
	if v, ok := e.unref(); ok && v&refCount == 0 && v&refDetached != 0 {
		_ = c.finalize(e, v&refStale != 0 && !ours)
	}
	return false
}

// Release ends one Acquire. The last release of an entry invalidated or evicted
// meanwhile deregisters it; an uncached region is deregistered at once.
func (c *Cache[R]) Release(e *Region[R]) error {
	if e == nil {
		return ErrNotAcquired
	}
	if !e.cached {
		if !e.ref.CompareAndSwap(1, refDetached) {
			return ErrNotAcquired
		}
		return c.finalize(e, false)
	}
	v, ok := e.unref()
	if !ok {
		return ErrNotAcquired
	}
	if v&refCount != 0 {
		return nil
	}
	if v&refDetached != 0 {
		return c.finalize(e, v&refStale != 0)
	}
	if e.inLRU.Load() == 1 {
		if e.touched.Load() == 0 {
			e.touched.Store(1)
		}
		return nil
	}
	c.mu.Lock()
	if e.ref.Load() == 0 {
		c.lru.add(e)
	}
	c.mu.Unlock()
	return nil
}

// finalize deregisters e, which nobody holds any more.
func (c *Cache[R]) finalize(e *Region[R], staleInUse bool) error {
	if staleInUse {
		c.st.staleInUse.Add(1)
	}
	err := c.reg.Deregister(e.reg)
	if e.cached {
		c.st.pinned.Add(-int64(e.end - e.start))
	}
	e.objs = nil
	e.base = nil
	if err != nil {
		return fmt.Errorf("regcache: deregister [%#x,%#x): %w", e.start, e.end, err)
	}
	return nil
}

// Invalidate drops the cached entries overlapping [addr, addr+length) of this cache
// only (driverhooks.Invalidate reaches every cache).
func (c *Cache[R]) Invalidate(addr, length uintptr) {
	if length == 0 {
		return
	}
	c.mu.Lock()
	c.invalidateLocked(addr, addr+length)
	c.unlock()
}

// Flush drops every cached entry; entries in use are deregistered on release.
func (c *Cache[R]) Flush() {
	c.mu.Lock()
	c.flushLocked(false)
	c.unlock()
}

// notifierInfo is what a Source may say about itself (*driverhooks.Notifier does).
type notifierInfo interface {
	Kind() driverhooks.Kind
	Guarantee() string
}

// Stats returns the counters, the limits, the process's locked memory (read from
// /proc/self/status now) and the notifier in use.
func (c *Cache[R]) Stats() Stats {
	s := c.st.snapshot()
	c.mu.Lock()
	s.Entries = c.idx.len()
	c.mu.Unlock()
	s.MaxBytes, s.MemlockLimit = c.lim.maxBytes, c.lim.memlock
	if l, err := ReadLockedMemory(); err == nil {
		s.Locked = l
	}
	if n, ok := c.src.(notifierInfo); ok {
		s.Notifier, s.Guarantee = n.Kind(), n.Guarantee()
	}
	return s
}

// Limits returns the effective bounds: entries, pinned bytes, and the RLIMIT_MEMLOCK
// value that lowered the byte bound (0 if none applies).
func (c *Cache[R]) Limits() (maxEntries int, maxBytes, memlock uint64) {
	return c.lim.maxEntries, c.lim.maxBytes, c.lim.memlock
}

// Close drops every entry and stops the subscription. Regions still held stay valid
// until their Release, which deregisters them. Acquire then fails with ErrClosed;
// Close must not run concurrently with an Acquire.
func (c *Cache[R]) Close() error {
	c.mu.Lock()
	if c.closed.Load() {
		c.mu.Unlock()
		return nil
	}
	c.closed.Store(true)
	c.flushLocked(false)
	c.sub.Close()
	c.unlock()
	removeCache(c)
	if c.oracle != nil {
		return c.oracle.Close()
	}
	return nil
}
