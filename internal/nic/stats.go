package nic

import (
	"github.com/goportals/goportals/driverhooks"
	"github.com/goportals/goportals/regcache"
)

// CacheStats describe an NI's pin cache: the registrations it reuses, the notifier
// that keeps it coherent and the memory the process has locked. It is
// regcache.Stats: Hits and Misses of registration lookups, Evictions for the
// cache's limits, Invalidations when the notifier reported changed pages,
// StaleHits that the page-frame oracle caught (PTL_CHECK_PFN=1; any is a bug),
// Fallbacks to per-operation registration, MemlockRetries after the memlock
// limit refused a registration, Notifier and Guarantee (the backend in use and what
// a hit is worth with it), PinnedBytes and MaxBytes (the cache's pins and its cap,
// PTL_RCACHE_MAX_BYTES), MemlockLimit, and Locked (VmLck and VmPin of the process).
type CacheStats = regcache.Stats

// CacheStats returns the statistics of the NI's pin cache. The NI makes its cache
// on first use; a finalized NI (or one whose cache could not be made) reports only
// the notifier and the process's locked memory.
func (ni *NI) CacheStats() CacheStats {
	if ni != nil && !ni.dead.Load() {
		if reg, err := ni.registry(); err == nil {
			return reg.Stats()
		}
	}
	n := driverhooks.Default()
	s := CacheStats{Notifier: n.Kind(), Guarantee: n.Guarantee()}
	if l, err := regcache.ReadLockedMemory(); err == nil {
		s.Locked = l
	}
	return s
}
