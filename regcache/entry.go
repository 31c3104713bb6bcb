package regcache

import (
	"sync/atomic"
	"unsafe"
)

// Bits of Region.ref. The low 32 bits count holders.
const (
	refCount    = 1<<32 - 1
	refDetached = 1 << 62 // out of the index: never handed out again
	refStale    = 1 << 63 // detached because its pages changed
)

// Region is one registration handed out by Acquire: either a cached entry shared by
// every holder of an overlapping range, or an uncached per-operation registration.
// It stays valid until the matching Release.
type Region[R any] struct {
	start, end uintptr // page-aligned registered range
	reg        R
	// base points at start (for building the registration slice).
	base unsafe.Pointer
	// objs keep the registered memory's objects alive: while a Region holds them the
	// GC can neither free nor scavenge their pages.
	objs []unsafe.Pointer
	// ref counts holders and carries the detached and stale bits.
	ref atomic.Uint64
	// inLRU is 1 while the entry is in the cache's LRU list (written under the cache
	// lock); touched asks eviction for a second chance (see lru.go).
	inLRU   atomic.Uint32
	touched atomic.Uint32
	cached  bool
	pfn     []uint64 // page frames at registration (PTL_CHECK_PFN=1)
}

// Reg returns the registration (for verbs, the MR with its keys).
func (r *Region[R]) Reg() R { return r.reg }

// Addr returns the first address of the registered range (page-aligned).
func (r *Region[R]) Addr() uintptr { return r.start }

// Len returns the length of the registered range in bytes (whole pages).
func (r *Region[R]) Len() int { return int(r.end - r.start) }

// Cached reports whether the region is a cached entry (false: a per-operation
// registration that Release deregisters).
func (r *Region[R]) Cached() bool { return r.cached }

// Contains reports whether [addr, addr+length) lies inside the registered range.
func (r *Region[R]) Contains(addr uintptr, length int) bool {
	return addr >= r.start && addr+uintptr(length) <= r.end && addr+uintptr(length) >= addr
}

// tryRef takes a reference unless the entry is detached.
func (r *Region[R]) tryRef() bool {
	for {
		v := r.ref.Load()
		if v&refDetached != 0 {
			return false
		}
		if r.ref.CompareAndSwap(v, v+1) {
			return true
		}
	}
}

// unref drops a reference; it returns the new word, or ok=false if nobody held one.
func (r *Region[R]) unref() (v uint64, ok bool) {
	for {
		old := r.ref.Load()
		if old&refCount == 0 {
			return old, false
		}
		if r.ref.CompareAndSwap(old, old-1) {
			return old - 1, true
		}
	}
}

// detach marks the entry as out of the index (and stale if its pages changed). It
// returns true when nobody holds it: the caller then owns its deregistration.
// Otherwise the last Release deregisters it.
func (r *Region[R]) detach(stale bool) (unused bool) {
	bits := uint64(refDetached)
	if stale {
		bits |= refStale
	}
	for {
		old := r.ref.Load()
		if old&refDetached != 0 {
			return false // already detached: ownership decided then
		}
		if r.ref.CompareAndSwap(old, old|bits) {
			return old&refCount == 0
		}
	}
}

// detachIfUnused detaches the entry only if nobody holds it (eviction); the caller
// then owns its deregistration.
func (r *Region[R]) detachIfUnused() bool {
	old := r.ref.Load()
	if old&(refCount|refDetached) != 0 {
		return false
	}
	return r.ref.CompareAndSwap(old, old|refDetached)
}
