package regcache

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"

	"github.com/goportals/goportals/internal/verbs"
)

// LockedMemory is what the kernel charges to the process against RLIMIT_MEMLOCK, as
// /proc/self/status reports it. mlock is checked against Locked alone; long-term
// pins (ibv_reg_mr, and the io_uring fixed buffers of the soft provider) are counted
// in Pinned. io_uring also charges its pins to a per-user counter that no file shows:
// the pins of every process of the user share one limit.
type LockedMemory struct {
	// Locked is VmLck: bytes locked with mlock (mm->locked_vm).
	Locked uint64
	// Pinned is VmPin: bytes pinned for devices and io_uring (mm->pinned_vm).
	Pinned uint64
}

// Total returns Locked + Pinned.
func (l LockedMemory) Total() uint64 { return l.Locked + l.Pinned }

// ReadLockedMemory returns the process's locked and pinned memory (Linux; elsewhere
// an error).
func ReadLockedMemory() (LockedMemory, error) { return readLockedMemory() }

// parseLockedMemory reads the VmLck and VmPin lines of a /proc/<pid>/status file
// (kB). VmLck is required; VmPin is absent on old kernels.
func parseLockedMemory(r io.Reader) (LockedMemory, error) {
	var l LockedMemory
	found := false
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), ":")
		if !ok || (key != "VmLck" && key != "VmPin") {
			continue
		}
		f := strings.Fields(val)
		if len(f) != 2 || f[1] != "kB" {
			return LockedMemory{}, fmt.Errorf("regcache: /proc/self/status: unexpected %s line %q", key, val)
		}
		kb, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			return LockedMemory{}, fmt.Errorf("regcache: /proc/self/status: %s: %w", key, err)
		}
		if key == "VmLck" {
			l.Locked, found = kb<<10, true
		} else {
			l.Pinned = kb << 10
		}
	}
	if err := sc.Err(); err != nil {
		return LockedMemory{}, err
	}
	if !found {
		return LockedMemory{}, errors.New("regcache: /proc/self/status has no VmLck line")
	}
	return l, nil
}

// isMemlock reports whether a registrar's error is a refusal for the memlock limit.
func isMemlock(err error) bool { return errors.Is(err, verbs.ErrMemlock) }

// MemlockError reports memory that could not be pinned for the memlock limit even
// after every unused entry of every cache of the process was evicted and the
// transfer's own pages were tried alone. It matches verbs.ErrMemlock (through Err).
type MemlockError struct {
	// Addr and Len give the pages that could not be pinned.
	Addr, Len uintptr
	// Locked is the process's locked memory when it failed (Known: it could be read).
	Locked      LockedMemory
	LockedKnown bool
	// Limit is the RLIMIT_MEMLOCK soft limit (0: infinite or unknown); Exempt
	// reports that the process holds CAP_IPC_LOCK, so mlock and device pins are not
	// bounded by it.
	Limit  uint64
	Exempt bool
	// CacheBytes is what this cache's entries still pinned (entries in use);
	// CacheMax is the cache's own cap (PTL_RCACHE_MAX_BYTES, lowered to Limit).
	CacheBytes, CacheMax uint64
	// Err is the registrar's error.
	Err error
}

// Error says what is locked, the limit, and the knobs.
func (e *MemlockError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "regcache: cannot pin %s at %#x: ", fmtBytes(uint64(e.Len)), e.Addr)
	if e.LockedKnown {
		fmt.Fprintf(&b, "the process has %s locked (VmLck %s + VmPin %s)",
			fmtBytes(e.Locked.Total()), fmtBytes(e.Locked.Locked), fmtBytes(e.Locked.Pinned))
	} else {
		b.WriteString("the process's locked memory (VmLck + VmPin) is unknown")
	}
	switch {
	case e.Limit != 0 && !e.Exempt:
		fmt.Fprintf(&b, " of RLIMIT_MEMLOCK %s (ulimit -l raises it; io_uring pins of all the user's processes count against it together)",
			fmtBytes(e.Limit))
	case e.Limit != 0:
		fmt.Fprintf(&b, "; RLIMIT_MEMLOCK is %s but the process holds CAP_IPC_LOCK", fmtBytes(e.Limit))
	default:
		b.WriteString("; RLIMIT_MEMLOCK is unlimited")
	}
	fmt.Fprintf(&b, "; the pin cache holds %s in use after evicting every unused entry, its own cap is %s (%s)",
		fmtBytes(e.CacheBytes), fmtBytes(e.CacheMax), EnvMaxBytes)
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the registrar's error.
func (e *MemlockError) Unwrap() error { return e.Err }

// fmtBytes formats n in binary units.
func fmtBytes(n uint64) string {
	switch {
	case n >= 1<<30 && n%(1<<20) == 0:
		return strconv.FormatFloat(float64(n)/(1<<30), 'f', -1, 64) + " GiB"
	case n >= 1<<20:
		return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + " MiB"
	case n >= 1<<10:
		return strconv.FormatFloat(float64(n)/(1<<10), 'f', 1, 64) + " KiB"
	}
	return strconv.FormatUint(n, 10) + " B"
}

// reclaimer is a cache that can give up unused entries to make room under the
// process's memlock limit.
type reclaimer interface {
	// reclaimUnused evicts unused entries of up to need bytes (at least one entry
	// if there is one) and returns the bytes it deregistered.
	reclaimUnused(need uint64) uint64
}

// caches are the open caches of the process: RLIMIT_MEMLOCK is the process's, so a
// cache refused for it may take room from the others.
var caches struct {
	mu  sync.Mutex
	set map[reclaimer]struct{}
}

func addCache(c reclaimer) {
	caches.mu.Lock()
	if caches.set == nil {
		caches.set = make(map[reclaimer]struct{})
	}
	caches.set[c] = struct{}{}
	caches.mu.Unlock()
}

func removeCache(c reclaimer) {
	caches.mu.Lock()
	delete(caches.set, c)
	caches.mu.Unlock()
}

// reclaimOthers asks the process's other caches for up to need bytes of unused
// entries. The caller holds no cache lock.
func reclaimOthers(self reclaimer, need uint64) uint64 {
	caches.mu.Lock()
	others := make([]reclaimer, 0, len(caches.set))
	for c := range caches.set {
		if c != self {
			others = append(others, c)
		}
	}
	caches.mu.Unlock()
	freed := uint64(0)
	for _, c := range others {
		if freed >= need {
			break
		}
		freed += c.reclaimUnused(need - freed)
	}
	return freed
}
