package portals

import (
	"errors"
	"sync"

	"github.com/goportals/goportals/internal/bootstrap"
	"github.com/goportals/goportals/internal/nic"
	"github.com/goportals/goportals/ptlerr"
)

// Init initializes the library (PtlInit). Init may be called several times; each
// call needs a Fini. A bad environment knob (see the README's table) makes it fail
// with Fail and an error naming the variable and the values it accepts.
func Init() error { return nic.Init() }

// Fini ends one Init (PtlFini); the last one finalizes every network interface
// still open, and leaves the job unless KeepJob was called.
func Fini() { nic.Fini() }

// KeepJob keeps the process's join of its job (the launcher connection the first
// Init opens) past the last Fini, for the life of the process, so that a later
// Init works in the same job again: a launcher admits one join per rank, and
// programs made of parts that each call Init and Fini bring the count to zero
// and back. Call LeaveJob before the process exits; the C ABI does so at exit.
func KeepJob() { bootstrap.KeepShared() }

// LeaveJob ends a join KeepJob kept: InUse while an Init has no Fini yet. After
// it, an Init under a launcher fails.
func LeaveJob() error {
	err := bootstrap.CloseShared()
	switch {
	case err == nil:
		return nil
	case errors.Is(err, bootstrap.ErrSharedHeld):
		return ptlerr.New("LeaveJob", InUse, err)
	}
	return ptlerr.New("LeaveJob", Fail, err)
}

// NI is a network interface (ptl_handle_ni_t): a portal table, the descriptors,
// entries, event queues and counters bound to it, and the engine that moves its
// data. Compare handles with ==.
type NI struct {
	n *nic.NI

	mu  sync.Mutex
	pts map[PTIndex]*PT // the allocated portal table entries, for PT
}

var owners sync.Mutex // guards nic.NI.Owner

// NIInit initializes a network interface (PtlNIInit) of iface with opts: one of
// NIMatching/NINoMatching and one of NILogical/NIPhysical. pid is the physical
// process id to take on the node (PIDAny: any free one; all the NIs of a process
// share it). desired are the limits asked for (nil: the largest); Limits reports
// those granted. A second NIInit with the same options returns the same NI, which
// then needs one more Fini.
func NIInit(iface Interface, opts NIOptions, pid PID, desired *Limits) (*NI, error) {
	var d *nic.Limits
	if desired != nil {
		l := nic.Limits(*desired)
		d = &l
	}
	n, err := nic.NIInit(nic.Interface(iface), nic.NIOptions(opts), pid, d)
	if err != nil {
		return nil, err
	}
	return wrapNI(n), nil
}

func wrapNI(n *nic.NI) *NI {
	owners.Lock()
	defer owners.Unlock()
	if ni, ok := n.Owner.(*NI); ok {
		return ni
	}
	ni := &NI{n: n}
	n.Owner = ni
	return ni
}

// errNil is the error of a call on a nil handle.
func errNil(op, what string) error {
	return nic.NilHandle(op, what+" handle")
}

// Fini releases one NIInit (PtlNIFini); the last one finalizes the interface and
// frees everything bound to it.
func (ni *NI) Fini() error {
	if ni == nil || ni.n == nil {
		return errNil("PtlNIFini", "NI")
	}
	return ni.n.Fini()
}

// Limits returns the limits granted at NIInit.
func (ni *NI) Limits() Limits { return Limits(ni.n.Limits()) }

// Options returns the options the NI was initialized with.
func (ni *NI) Options() NIOptions { return NIOptions(ni.n.Options()) }

// Matching reports whether the NI matches (NIMatching).
func (ni *NI) Matching() bool { return ni.n.Matching() }

// Logical reports whether the NI addresses processes by rank (NILogical).
func (ni *NI) Logical() bool { return ni.n.Logical() }

// ID returns the process id of this process on the NI (PtlGetId): its rank on a
// logical NI, its node and process ids on a physical one.
func (ni *NI) ID() (ProcessID, error) {
	if ni == nil || ni.n == nil {
		return ProcessID{}, errNil("PtlGetId", "NI")
	}
	return ni.n.ID()
}

// PhysID returns the physical id (node and process ids) of this process
// (PtlGetPhysId), which another process uses to reach it or puts in its map.
func (ni *NI) PhysID() (ProcessID, error) {
	if ni == nil || ni.n == nil {
		return ProcessID{}, errNil("PtlGetPhysId", "NI")
	}
	return ni.n.PhysID()
}

// UID returns the user id this process sends with its messages (PtlGetUid).
func (ni *NI) UID() (UID, error) {
	if ni == nil || ni.n == nil {
		return 0, errNil("PtlGetUid", "NI")
	}
	return ni.n.UID()
}

// Status reads a status register (PtlNIStatus).
func (ni *NI) Status(sr SR) (uint64, error) {
	if ni == nil || ni.n == nil {
		return 0, errNil("PtlNIStatus", "NI")
	}
	return ni.n.Status(nic.SR(sr))
}

// SetMap sets the logical-to-physical map of a logical NI (PtlSetMap): rank i is
// m[i], a physical id another process obtained from its PhysID.
func (ni *NI) SetMap(m []ProcessID) error {
	if ni == nil || ni.n == nil {
		return errNil("PtlSetMap", "NI")
	}
	return ni.n.SetMap(m)
}

// Map returns a copy of the logical map of a logical NI (PtlGetMap).
func (ni *NI) Map() ([]ProcessID, error) {
	if ni == nil || ni.n == nil {
		return nil, errNil("PtlGetMap", "NI")
	}
	return ni.n.Map()
}

// StartBundle and EndBundle bracket a group of operations the NI may aggregate
// (PtlStartBundle, PtlEndBundle); they are hints.
func (ni *NI) StartBundle() error {
	if ni == nil || ni.n == nil {
		return errNil("PtlStartBundle", "NI")
	}
	return ni.n.StartBundle()
}

// EndBundle ends a bundle begun by StartBundle (PtlEndBundle).
func (ni *NI) EndBundle() error {
	if ni == nil || ni.n == nil {
		return errNil("PtlEndBundle", "NI")
	}
	return ni.n.EndBundle()
}

// AtomicSync makes the results of atomic operations that completed at this
// process visible to its loads (PtlAtomicSync).
func AtomicSync() error { return nic.AtomicSync() }

// CacheStats are the pin cache's counters for an NI: hits, misses, evictions,
// invalidations by the notifier, and what is pinned now.
type CacheStats struct {
	// Hits and Misses count lookups served by a cached registration and lookups
	// that registered memory.
	Hits, Misses uint64
	// Evictions counts unused registrations dropped to respect the limits.
	Evictions uint64
	// Invalidations counts registrations dropped because their pages changed.
	Invalidations uint64
	// StaleInUse counts registrations invalidated while a transfer used them.
	StaleInUse uint64
	// Fallbacks counts per-operation (uncached) registrations.
	Fallbacks uint64
	// StaleHits counts hits whose page frames had changed (checked only with
	// PTL_CHECK_PFN=1); any nonzero value is a coherence bug.
	StaleHits uint64
	// Entries and PinnedBytes describe the cache now.
	Entries     int
	PinnedBytes uint64
}

// CacheStats returns the counters of the NI's pin cache.
func (ni *NI) CacheStats() CacheStats {
	s := ni.n.CacheStats()
	return CacheStats{Hits: s.Hits, Misses: s.Misses, Evictions: s.Evictions, Invalidations: s.Invalidations,
		StaleInUse: s.StaleInUse, Fallbacks: s.Fallbacks, StaleHits: s.StaleHits, Entries: s.Entries,
		PinnedBytes: s.PinnedBytes}
}

// PT returns the handle of the allocated portal table entry idx, for code that
// names entries by index (as portals4.h does).
func (ni *NI) PT(idx PTIndex) (*PT, bool) {
	if ni == nil || ni.n == nil {
		return nil, false
	}
	ni.mu.Lock()
	defer ni.mu.Unlock()
	p, ok := ni.pts[idx]
	return p, ok
}
