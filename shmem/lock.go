package shmem

import (
	"context"
	"time"
)

// Locks are symmetric int64 words (shmem_set_lock's long). The lock state lives
// in the word at PE 0: 0 when free, the holder's PE number plus one when held.
// Acquiring is a compare-and-swap from 0; a PE that finds the lock held backs
// off (up to maxBackoff) and tries again, so the lock is not fair.

const maxBackoff = 100 * time.Microsecond

func checkLock(w *World, lock Sym[int64]) error {
	if err := w.check(); err != nil {
		return err
	}
	if err := lock.valid(); err != nil {
		return err
	}
	if lock.w != w || lock.n < 1 {
		return errf(ErrInvalidArg, "lock is not a symmetric int64 of this World")
	}
	return nil
}

// TestLock tries once to acquire lock (shmem_test_lock) and reports whether it
// did.
func (w *World) TestLock(ctx context.Context, lock Sym[int64]) (bool, error) {
	const op = "shmem_test_lock"
	if err := checkLock(w, lock); err != nil {
		return false, opErr(op, err)
	}
	old, err := AtomicCompareSwap(ctx, w.def, lock.At(0), 0, int64(w.me+1), 0)
	if err != nil {
		return false, opErr(op, err)
	}
	if old == int64(w.me+1) {
		return false, opErr(op, errf(ErrInvalidArg, "lock already held by this PE"))
	}
	return old == 0, nil
}

// SetLock acquires lock (shmem_set_lock), waiting until it is free or ctx ends.
func (w *World) SetLock(ctx context.Context, lock Sym[int64]) error {
	const op = "shmem_set_lock"
	backoff := time.Microsecond
	for {
		ok, err := w.TestLock(ctx, lock)
		if err != nil {
			return opErr(op, err)
		}
		if ok {
			return nil
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return opErr(op, ctx.Err())
		case <-t.C:
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// ClearLock completes this PE's outstanding operations (so what it wrote under
// the lock is visible) and releases lock (shmem_clear_lock). Releasing a lock
// this PE does not hold is ErrNotHeld.
func (w *World) ClearLock(ctx context.Context, lock Sym[int64]) error {
	const op = "shmem_clear_lock"
	if err := checkLock(w, lock); err != nil {
		return opErr(op, err)
	}
	if err := w.quietAll(ctx); err != nil {
		return opErr(op, err)
	}
	old, err := AtomicCompareSwap(ctx, w.def, lock.At(0), int64(w.me+1), 0, 0)
	if err != nil {
		return opErr(op, err)
	}
	if old != int64(w.me+1) {
		return opErr(op, errf(ErrNotHeld, "lock word is %d", old))
	}
	return nil
}
