package shmem

import (
	"context"
	"sync/atomic"
	"time"
	"unsafe"
)

// Cmp is the comparison of WaitUntil and Test (SHMEM_CMP_*).
type Cmp uint8

// Comparisons.
const (
	CmpEQ Cmp = iota // SHMEM_CMP_EQ
	CmpNE            // SHMEM_CMP_NE
	CmpGT            // SHMEM_CMP_GT
	CmpGE            // SHMEM_CMP_GE
	CmpLT            // SHMEM_CMP_LT
	CmpLE            // SHMEM_CMP_LE
)

func (c Cmp) holds(a, b int64, signed bool) bool {
	less := a < b
	if !signed {
		less = uint64(a) < uint64(b)
	}
	switch c {
	case CmpEQ:
		return a == b
	case CmpNE:
		return a != b
	case CmpGT:
		return !less && a != b
	case CmpGE:
		return !less
	case CmpLT:
		return less
	case CmpLE:
		return less || a == b
	}
	return false
}

// recheck is how long a wait sleeps on the target counter before it looks at
// memory again: a store made by this PE itself (another goroutine) does not
// move the counter.
const recheck = time.Millisecond

// defaultSpinFor is how long a wait drives the engine on its own goroutine
// before it naps.
const defaultSpinFor = time.Millisecond

// load reads element i of s's local copy atomically, widened to 64 bits.
func load[T AMOElem](s Sym[T], i int) int64 {
	p := unsafe.Pointer(&s.w.heap[s.off+uint64(i*sizeOf[T]())])
	if sizeOf[T]() == 4 {
		v := atomic.LoadUint32((*uint32)(p))
		if isSigned[T]() {
			return int64(int32(v))
		}
		return int64(v)
	}
	return int64(atomic.LoadUint64((*uint64)(p)))
}

func isSigned[T AMOElem]() bool {
	var z T
	z--
	return z < 0
}

// widen widens v as load does.
func widen[T AMOElem](v T) int64 {
	if isSigned[T]() {
		return int64(v)
	}
	return int64(uint64(v))
}

func checkWait[T AMOElem](s Sym[T], cmp Cmp) error {
	if err := s.valid(); err != nil {
		return err
	}
	if cmp > CmpLE {
		return errf(ErrInvalidArg, "comparison %d", cmp)
	}
	return nil
}

// matching returns the indices of s whose local value satisfies cmp against v.
func matching[T AMOElem](s Sym[T], cmp Cmp, v T, stopAtFirst bool) []int {
	var idx []int
	w := widen(v)
	signed := isSigned[T]()
	for i := 0; i < s.n; i++ {
		if cmp.holds(load(s, i), w, signed) {
			idx = append(idx, i)
			if stopAtFirst {
				break
			}
		}
	}
	return idx
}

// waitFor blocks until done returns true. For its first spinFor it sleeps on
// the heap's target counter between looks, which drives this PE's progress on
// the caller's goroutine and returns as soon as the counter moves; after that
// it naps between looks (nap), looking only at memory, leaving the CPU to the
// PEs that work and the progress to the NI's own goroutine. A PE that waits
// long (a barrier while another PE streams puts into it) then costs little
// CPU, where spinning would take a core from the PE it waits for on a node
// with no core to spare.
func (w *World) waitFor(ctx context.Context, done func() bool) error {
	var spinUntil time.Time
	for {
		// A round looks at the heap and the target counter only while it
		// holds look shared, and only if the World is not closed: Close sets
		// closed under look held exclusively before it frees either.
		w.look.RLock()
		if w.closed.Load() {
			w.look.RUnlock()
			return ErrClosed
		}
		now := time.Now()
		if spinUntil.IsZero() {
			spinUntil = now.Add(w.spinFor)
		}
		left := spinUntil.Sub(now)
		spin := left > 0 || !w.t.mayNap()
		// A spinning round reads the counter before it looks at memory (a
		// store after the look moves the counter past seen). A nap reads
		// nothing but memory: reading the counter drives progress, which would
		// tell the NI's progress goroutine that this goroutine polls.
		var seen uint64
		if spin {
			var err error
			if seen, err = w.t.targetCount(); err != nil {
				w.look.RUnlock()
				return err
			}
		}
		if done() {
			w.look.RUnlock()
			return nil
		}
		if err := ctx.Err(); err != nil {
			w.look.RUnlock()
			return err
		}
		var err error
		if spin {
			w.spins.Add(1)
			if left <= 0 || left > recheck {
				left = recheck
			}
			// Under look: the wait uses the counter (it ends within recheck,
			// so Close waits at most that long).
			err = w.t.waitTarget(ctx, seen, left)
			w.look.RUnlock()
		} else {
			w.look.RUnlock()
			err = sleepCtx(ctx, nap)
			w.naps.Add(1)
		}
		if w.onRound != nil {
			w.onRound()
		}
		if err != nil {
			return err
		}
	}
}

// nap is how long a wait past its spinning budget sleeps between looks (the
// Go runtime's timers make it about a millisecond on Linux).
const nap = 200 * time.Microsecond

// poll runs a round of this PE's progress for Test and its variants when
// nothing else would: without the NI's progress goroutine
// (PTL_PROGRESS_GOROUTINE=0) only the calls that wait or poll progress the
// engine, and a program that polls with Test would otherwise never answer the
// requests that reach the PE. With the goroutine, Test looks at memory only.
func (w *World) poll() {
	if w.t.mayNap() {
		return
	}
	w.look.RLock()
	if !w.closed.Load() {
		w.t.targetCount() // reading the counter runs a progress round
	}
	w.look.RUnlock()
}

// Test reports whether the local copy of ivar's first element satisfies cmp
// against v (shmem_test).
func Test[T AMOElem](ivar Sym[T], cmp Cmp, v T) (bool, error) {
	if err := checkWait(ivar, cmp); err != nil || ivar.n == 0 {
		return false, opErr("shmem_test", orEmpty(err, ivar.n))
	}
	ivar.w.poll()
	return len(matching(ivar.Slice(0, 1), cmp, v, true)) == 1, nil
}

func orEmpty(err error, n int) error {
	if err == nil && n == 0 {
		return errf(ErrOutOfRange, "empty object")
	}
	return err
}

// TestAll reports whether every element of ivars satisfies cmp (shmem_test_all).
func TestAll[T AMOElem](ivars Sym[T], cmp Cmp, v T) (bool, error) {
	if err := checkWait(ivars, cmp); err != nil {
		return false, opErr("shmem_test_all", err)
	}
	ivars.w.poll()
	return len(matching(ivars, cmp, v, false)) == ivars.n, nil
}

// TestAny returns the index of an element of ivars that satisfies cmp, or -1
// (shmem_test_any).
func TestAny[T AMOElem](ivars Sym[T], cmp Cmp, v T) (int, error) {
	if err := checkWait(ivars, cmp); err != nil {
		return -1, opErr("shmem_test_any", err)
	}
	ivars.w.poll()
	if m := matching(ivars, cmp, v, true); len(m) > 0 {
		return m[0], nil
	}
	return -1, nil
}

// TestSome returns the indices of the elements of ivars that satisfy cmp
// (shmem_test_some).
func TestSome[T AMOElem](ivars Sym[T], cmp Cmp, v T) ([]int, error) {
	if err := checkWait(ivars, cmp); err != nil {
		return nil, opErr("shmem_test_some", err)
	}
	ivars.w.poll()
	return matching(ivars, cmp, v, false), nil
}

// WaitUntil blocks until the local copy of ivar's first element satisfies cmp
// against v (shmem_wait_until), or ctx ends.
func WaitUntil[T AMOElem](ctx context.Context, ivar Sym[T], cmp Cmp, v T) error {
	const op = "shmem_wait_until"
	if err := checkWait(ivar, cmp); err != nil || ivar.n == 0 {
		return opErr(op, orEmpty(err, ivar.n))
	}
	first := ivar.Slice(0, 1)
	return opErr(op, ivar.w.waitFor(ctx, func() bool { return len(matching(first, cmp, v, true)) == 1 }))
}

// WaitUntilAll blocks until every element of ivars satisfies cmp
// (shmem_wait_until_all).
func WaitUntilAll[T AMOElem](ctx context.Context, ivars Sym[T], cmp Cmp, v T) error {
	const op = "shmem_wait_until_all"
	if err := checkWait(ivars, cmp); err != nil {
		return opErr(op, err)
	}
	return opErr(op, ivars.w.waitFor(ctx, func() bool { return len(matching(ivars, cmp, v, false)) == ivars.n }))
}

// WaitUntilAny blocks until an element of ivars satisfies cmp and returns its
// index (shmem_wait_until_any). An empty ivars returns -1 at once.
func WaitUntilAny[T AMOElem](ctx context.Context, ivars Sym[T], cmp Cmp, v T) (int, error) {
	const op = "shmem_wait_until_any"
	if err := checkWait(ivars, cmp); err != nil {
		return -1, opErr(op, err)
	}
	if ivars.n == 0 {
		return -1, nil
	}
	found := -1
	err := ivars.w.waitFor(ctx, func() bool {
		if m := matching(ivars, cmp, v, true); len(m) > 0 {
			found = m[0]
			return true
		}
		return false
	})
	return found, opErr(op, err)
}

// WaitUntilSome blocks until at least one element of ivars satisfies cmp and
// returns the indices of all that do (shmem_wait_until_some).
func WaitUntilSome[T AMOElem](ctx context.Context, ivars Sym[T], cmp Cmp, v T) ([]int, error) {
	const op = "shmem_wait_until_some"
	if err := checkWait(ivars, cmp); err != nil {
		return nil, opErr(op, err)
	}
	if ivars.n == 0 {
		return nil, nil
	}
	var found []int
	err := ivars.w.waitFor(ctx, func() bool {
		found = matching(ivars, cmp, v, false)
		return len(found) > 0
	})
	return found, opErr(op, err)
}
