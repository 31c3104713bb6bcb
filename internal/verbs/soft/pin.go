package soft

import (
	"errors"
	"sync"
	"syscall"

	"github.com/goportals/goportals/internal/verbs"
)

const pageSize = 4096

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
