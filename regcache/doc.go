// Package regcache is the LRU pin cache: it keeps registrations of address ranges
// alive across operations, looks them up by containment in an interval index, bounds
// them by count, bytes and RLIMIT_MEMLOCK, and drops them when driverhooks reports that
// the pages behind a range changed.
//
// A Cache[R] is generic over the registration type R and a Registrar[R] that makes
// and undoes registrations (the engine adapts a verbs protection domain;
// MlockRegistrar pins with mlock). Acquire returns a *Region[R] covering the memory;
// Release ends the use. Registrations are page-granular and merged: a miss that
// overlaps cached entries registers their union and retires them. A hit (the page's
// lookaside slot names an entry containing the range and no invalidation is pending)
// takes no lock and allocates nothing.
//
// Coherence. Every cached range is watched by the notifier (driverhooks). A lookup
// first asks its subscription whether invalidations are pending; if so it drains them
// under the cache lock before answering, so a lookup that starts after munmap, mremap,
// mmap(MAP_FIXED) or madvise(DONTNEED/FREE) returned never gets the old entry. An
// entry invalidated while in use leaves the index at once and is deregistered by its
// last Release, never inside the notifier. Memory the notifier cannot watch (no cgo,
// userfaultfd refused, another monitor owns it, file-backed mappings) gets an uncached
// registration per operation: the cache never trusts unwatched memory. Each entry also
// holds real references to the Go objects it covers, so the GC can neither free nor
// scavenge them while cached; eviction drops the references.
//
// Memory-lock limits. Entries count against the cache's own cap (PTL_RCACHE_MAX_BYTES,
// lowered to RLIMIT_MEMLOCK) as they are made, but the kernel charges more than one
// cache's entries: the process's other registrations and mlocks (VmLck and VmPin of
// /proc/self/status, which ReadLockedMemory and Stats.Locked report) and, for the
// soft provider's io_uring pins, every process of the same user. So a registration
// the kernel refuses for the limit (an error matching verbs.ErrMemlock) evicts unused
// entries, this cache's first and the process's other caches' when it has none, and
// is tried again; a range that still does not fit gets an uncached registration of
// the transfer's own pages (a merged entry may be larger); what cannot be pinned
// even so fails with a *MemlockError that says what is locked, the limit and the
// cache's cap.
//
// The residual window of the userfaultfd backend: the kernel queues the UNMAP event of
// munmap after releasing the address range, so another thread that maps new memory at
// the same address and uses it before the event is queued could hit the old entry.
// Go memory (held by reference) and memory the library maps itself (notified with
// driverhooks.Invalidate before it is unmapped) are not exposed.
//
// Environment knobs, read by New for the Options fields left zero:
//
//	PTL_RCACHE_MAX_ENTRIES  maximum cached entries (default 4096)
//	PTL_RCACHE_MAX_BYTES    maximum pinned bytes of cached entries, e.g. 512M
//	                        (default 1G, lowered to RLIMIT_MEMLOCK unless the process
//	                        holds CAP_IPC_LOCK)
//	PTL_RCACHE_DISABLE      1: no caching, register and deregister per operation
//	PTL_CHECK_PFN           1: record page frames at registration and check them on
//	                        every hit (needs root); mismatches are counted as
//	                        Stats.StaleHits
//
// A bad value makes New fail with an *EnvError (matching ErrBadEnv).
//
// regcache imports driverhooks, internal/verbs and internal/envknob (the one reader
// of PTL_* variables); it never imports md or portals.
package regcache
