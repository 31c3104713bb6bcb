package soft

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/goportals/goportals/internal/envknob"
	"github.com/goportals/goportals/internal/verbs"
)

const pageSize = 4096

// Pin methods, as Context.PinMethod reports them.
const (
	// PinIOUring: regions are pinned as an HCA pins them, with long-term page
	// references held by a registered-buffer table of io_uring (one instance per
	// process, never used for I/O, created by the first such Open). The pages
	// stay ordinary memory: madvise(MADV_DONTNEED) on a registered range succeeds,
	// the next touch maps new frames, and the registration keeps the old frames
	// allocated (its page-map snapshot stays exact) until Dereg. Each registration
	// is charged on its own to RLIMIT_MEMLOCK (overlapping regions count twice, as
	// with ibv_reg_mr) unless the process has CAP_IPC_LOCK; unlike ibv_reg_mr and
	// mlock, which count per process, the kernel adds it to what io_uring pins for
	// the whole user, so processes of one user share one limit's worth: when the
	// others have spent it and the region still fits this process's own limit
	// (counting what it pins both ways), the region is mlocked instead, so each
	// process may pin its limit's worth as under an HCA. The process's ring itself
	// takes a few pages of the user's budget. Memory that cannot be pinned
	// for writing (read-only, or a shared mapping of a regular file) is mlocked
	// instead, region by region.
	PinIOUring = "io_uring"
	// PinMlock: regions are pinned with mlock, counted per page so overlapping
	// regions share the lock. mlock keeps pages resident but holds no reference:
	// madvise(MADV_DONTNEED) on a locked range fails with EINVAL. The fallback where
	// io_uring is unavailable (kernel.io_uring_disabled, ENOSYS, a seccomp filter).
	PinMlock = "mlock"
)

// pinEnv chooses the pin method of contexts opened afterwards: "io_uring" (Open
// fails with verbs.ErrNotSupported when it is unavailable), "mlock", or empty or
// "auto" for io_uring when available, mlock otherwise.
const pinEnv = string(envknob.SoftPin)

// pinTableSlots is the size of the process's io_uring buffer table, the kernel's
// bound: one slot per GiB of a region, so room for maxMR regions of 4 GiB. An empty
// table costs about 20 ns a slot to register (0.3 ms in all), paid once.
const pinTableSlots = 1 << 14

// pinChoice reads pinEnv.
func pinChoice() (string, error) {
	switch v := envknob.Get(envknob.SoftPin); v {
	case "", "auto":
		return "", nil
	case PinIOUring, PinMlock:
		return v, nil
	default:
		return "", fmt.Errorf("%s=%q: want %s, %s or auto", pinEnv, v, PinIOUring, PinMlock)
	}
}

// procPinner is the process's pin holder, shared by its contexts and created by
// the first Open that pins with io_uring. It lives as long as the process.
var procPinner struct {
	mu  sync.Mutex
	u   *uringPinner
	err error // a lasting refusal: later Opens do not try again
}

// processPinner returns the process's pin holder, creating it if need be.
func processPinner() (*uringPinner, error) {
	procPinner.mu.Lock()
	defer procPinner.mu.Unlock()
	if procPinner.u != nil || procPinner.err != nil {
		return procPinner.u, procPinner.err
	}
	u, err := newUringPinner(pinTableSlots)
	if err != nil {
		// Out of memory, of lockable memory or of descriptors may pass; a kernel
		// without io_uring, io_uring_disabled or a seccomp filter does not.
		var errno syscall.Errno
		if !errors.As(err, &errno) || (errno != syscall.ENOMEM && errno != syscall.EMFILE &&
			errno != syscall.ENFILE && errno != syscall.EAGAIN) {
			procPinner.err = err
		}
		return nil, err
	}
	procPinner.u = u
	return u, nil
}

// setupPinning gives c its pin method: want is PinIOUring, PinMlock or "" (the
// best available).
func (c *Context) setupPinning(want string) error {
	if want == PinMlock {
		c.pinWhy = "chosen"
		return nil
	}
	u, err := processPinner()
	if err != nil {
		if want == PinIOUring {
			return verbs.Errorf("open_device", verbs.ErrNotSupported, err)
		}
		c.pinWhy = err.Error()
		return nil
	}
	c.uring = u
	return nil
}

// PinMethod reports how the context pins registered memory: PinIOUring or
// PinMlock (see their descriptions). The environment variable PTL_SOFT_PIN
// chooses it when the context is opened: "io_uring", "mlock", or by default
// io_uring where the kernel allows it and mlock elsewhere (for good once the
// kernel refused it for a lasting reason).
func (c *Context) PinMethod() string {
	if c.uring != nil {
		return PinIOUring
	}
	return PinMlock
}

// pinHandle is how one region's pages are held.
type pinHandle struct {
	slots  []uint32 // io_uring buffer-table slots
	locked bool     // mlock pin (the per-page counts below)
}

// uringPinned is how many bytes this process holds pinned through io_uring.
var uringPinned atomic.Uint64

// pinRange pins the pages of [start, end) (page aligned) for one region.
func (c *Context) pinRange(start, end uintptr) (pinHandle, error) {
	if c.uring != nil {
		slots, err := c.uring.pin(start, end)
		if err == nil {
			uringPinned.Add(uint64(end - start))
			return pinHandle{slots: slots}, nil
		}
		switch {
		case errors.Is(err, syscall.EFAULT):
			// Not pinnable for writing (read-only or a shared file mapping): an HCA
			// registers it anyway, so lock it.
		case errors.Is(err, syscall.ENOMEM) && withinOwnBudget(uint64(end-start)):
			// io_uring charges the user, so other processes of the same user spent
			// the budget. An HCA counts per process, and by that count the region
			// fits: lock it, against this process's own RLIMIT_MEMLOCK.
		default:
			return pinHandle{}, uringPinError(err)
		}
	}
	if err := pin(start, end); err != nil {
		return pinHandle{}, err
	}
	return pinHandle{locked: true}, nil
}

// unpinRange drops the pins pinRange took.
func (c *Context) unpinRange(h pinHandle, start, end uintptr) {
	if h.slots != nil {
		c.uring.unpin(h.slots)
		uringPinned.Add(-uint64(end - start))
	}
	if h.locked {
		unpin(start, end)
	}
}

func uringPinError(err error) error {
	var errno syscall.Errno
	if errors.As(err, &errno) && errno == syscall.ENOMEM {
		return verbs.Errorf("reg_mr", verbs.ErrMemlock, err)
	}
	return verbs.Errorf("reg_mr", verbs.ErrNoResources, err)
}

// mlock does not nest: unlocking a page unlocks it for every registration that
// covers it. pins counts registrations per page so overlapping regions stay pinned
// until the last one goes, and only pages whose count moves between 0 and 1 cost a
// system call.
var pins struct {
	mu    sync.Mutex
	count map[uintptr]int32
}

// pin pins the pages of [start, end) (page aligned).
func pin(start, end uintptr) error {
	pins.mu.Lock()
	defer pins.mu.Unlock()
	if pins.count == nil {
		pins.count = make(map[uintptr]int32)
	}
	runStart := uintptr(0)
	flush := func(p uintptr) error {
		if runStart == 0 {
			return nil
		}
		err := mlockRange(runStart, p-runStart)
		if err != nil {
			return err
		}
		runStart = 0
		return nil
	}
	var err error
	var p uintptr
	for p = start; p < end; p += pageSize {
		if pins.count[p] == 0 {
			if runStart == 0 {
				runStart = p
			}
		} else if err = flush(p); err != nil {
			break
		}
	}
	if err == nil {
		err = flush(end)
	}
	if err != nil {
		// Undo: unlock the pages this call locked (those with count 0 below the failure).
		for q := start; q < p; q += pageSize {
			if pins.count[q] == 0 {
				munlockRange(q, pageSize)
			}
		}
		return pinError(err)
	}
	for p := start; p < end; p += pageSize {
		pins.count[p]++
	}
	return nil
}

// withinOwnBudget reports whether n more bytes keep what this process pins (through
// io_uring and mlock) within its RLIMIT_MEMLOCK.
func withinOwnBudget(n uint64) bool {
	lim, ok := memlockLimit()
	if !ok {
		return false
	}
	pins.mu.Lock()
	locked := uint64(len(pins.count)) * pageSize
	pins.mu.Unlock()
	return uringPinned.Load()+locked+n <= lim
}

// unpin drops one pin from the pages of [start, end).
func unpin(start, end uintptr) {
	pins.mu.Lock()
	defer pins.mu.Unlock()
	runStart := uintptr(0)
	for p := start; p < end; p += pageSize {
		c := pins.count[p] - 1
		if c <= 0 {
			delete(pins.count, p)
			if runStart == 0 {
				runStart = p
			}
			continue
		}
		pins.count[p] = c
		if runStart != 0 {
			munlockRange(runStart, p-runStart)
			runStart = 0
		}
	}
	if runStart != 0 {
		munlockRange(runStart, end-runStart)
	}
}

func pinError(err error) error {
	var errno syscall.Errno
	if errors.As(err, &errno) && (errno == syscall.ENOMEM || errno == syscall.EPERM || errno == syscall.EAGAIN) {
		return verbs.Errorf("reg_mr", verbs.ErrMemlock, err)
	}
	return verbs.Errorf("reg_mr", verbs.ErrNoResources, err)
}
