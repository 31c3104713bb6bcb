package regcache

import (
	"sync/atomic"

	"github.com/goportals/goportals/driverhooks"
)

// Stats are a cache's counters.
type Stats struct {
	// Hits counts Acquires served by a cached entry; Misses those that registered
	// a new entry.
	Hits, Misses uint64
	// Evictions counts unused entries dropped to respect the limits.
	Evictions uint64
	// Invalidations counts entries dropped because their pages changed (notifier
	// events, explicit Invalidate, full flushes).
	Invalidations uint64
	// StaleInUse counts releases that deregistered an entry invalidated while in use.
	StaleInUse uint64
	// Merges counts entries absorbed into a larger registration.
	Merges uint64
	// Fallbacks counts per-operation (uncached) registrations: memory the notifier
	// cannot watch, limits that eviction could not meet, or a disabled cache.
	Fallbacks uint64
	// StaleHits counts hits whose page frames changed since registration
	// (PTL_CHECK_PFN=1 only). Any nonzero value is a coherence bug.
	StaleHits uint64
	// MemlockRetries counts registrations tried again after the memlock limit
	// refused one and unused entries (of this cache or, when it had none, of the
	// process's other caches) were evicted to make room.
	MemlockRetries uint64
	// Entries and PinnedBytes describe the cache now (PinnedBytes includes entries
	// detached but still held).
	Entries     int
	PinnedBytes uint64
	// MaxBytes is the cache's own cap on PinnedBytes (PTL_RCACHE_MAX_BYTES or
	// Options.MaxBytes, lowered to MemlockLimit); MemlockLimit is the RLIMIT_MEMLOCK
	// soft limit that applies to the process (0: none, with CAP_IPC_LOCK or an
	// infinite limit).
	MaxBytes, MemlockLimit uint64
	// Locked is the process's locked and pinned memory as the kernel counts it
	// (VmLck and VmPin of /proc/self/status; Locked.Total() is the sum), read when
	// Stats is called; zero where it cannot be read.
	Locked LockedMemory
	// Notifier names the notifier backend that keeps the cache coherent and
	// Guarantee says what a hit is worth with it (see driverhooks.Notifier); both
	// are empty for a Source that does not say.
	Notifier  driverhooks.Kind
	Guarantee string
}

// counters are the atomic counters behind Stats.
type counters struct {
	hits, misses, evictions, invalidations, staleInUse, merges, fallbacks, staleHits atomic.Uint64
	memlockRetries                                                                   atomic.Uint64
	pinned                                                                           atomic.Int64
}

func (c *counters) snapshot() Stats {
	return Stats{
		Hits:           c.hits.Load(),
		Misses:         c.misses.Load(),
		Evictions:      c.evictions.Load(),
		Invalidations:  c.invalidations.Load(),
		StaleInUse:     c.staleInUse.Load(),
		Merges:         c.merges.Load(),
		Fallbacks:      c.fallbacks.Load(),
		StaleHits:      c.staleHits.Load(),
		MemlockRetries: c.memlockRetries.Load(),
		PinnedBytes:    uint64(c.pinned.Load()),
	}
}
