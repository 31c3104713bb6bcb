package shmem

import (
	"context"
	"errors"
)

// syncAll is a dissemination barrier over the heap (shmem_sync_all without the
// op name): in round k each PE adds one to flag k at PE me+2^k and waits until
// its own flag k has been raised in this barrier. The flags count barriers, so
// nothing is reset and a PE that is one barrier ahead cannot confuse one that
// is behind.
func (w *World) syncAll(ctx context.Context) error {
	if err := w.check(); err != nil {
		return err
	}
	w.barrierEpoch++
	epoch := w.barrierEpoch
	flags := Sym[uint64]{w: w, off: w.psync, n: maxBarrierRounds}
	for k, dist := 0, 1; dist < w.n; k, dist = k+1, dist*2 {
		to := (w.me + dist) % w.n
		if err := w.coll.d.atomic(ctx, to, w.psync+uint64(8*k), amoSum, one(uint64(1))); err != nil {
			return err
		}
		flag := flags.At(k)
		if err := w.waitFor(ctx, func() bool { return uint64(load(flag, 0)) >= epoch }); err != nil {
			return err
		}
	}
	return nil
}

// barrierAll completes every context's operations, then synchronizes.
func (w *World) barrierAll(ctx context.Context) error {
	if err := w.check(); err != nil {
		return err
	}
	if err := w.quietAll(ctx); err != nil {
		return err
	}
	return w.syncAll(ctx)
}

// BarrierAll completes every outstanding operation of this PE (of every
// context) and waits until every PE has called it (shmem_barrier_all).
func (w *World) BarrierAll(ctx context.Context) error {
	return opErr("shmem_barrier_all", w.barrierAll(ctx))
}

// SyncAll waits until every PE has called it (shmem_sync_all); it completes no
// operations.
func (w *World) SyncAll(ctx context.Context) error {
	return opErr("shmem_sync_all", w.syncAll(ctx))
}

// scratchSym allocates a symmetric temporary inside a collective (every PE
// allocates it at the same point, so at the same offset) without a barrier.
func scratchSym[T Elem](w *World, n int) (Sym[T], error) {
	w.amu.Lock()
	off, ok := w.alloc.allocate(uint64(n*sizeOf[T]()), 8)
	w.amu.Unlock()
	if !ok {
		return Sym[T]{}, errf(ErrNoSpace, "%d bytes of collective scratch", n*sizeOf[T]())
	}
	return Sym[T]{w: w, off: off, n: n}, nil
}

func (w *World) releaseScratch(off uint64) {
	w.amu.Lock()
	w.alloc.release(off)
	w.amu.Unlock()
}

// checkColl validates the symmetric objects of a collective.
func checkColl[T Elem](w *World, syms ...Sym[T]) error {
	if err := w.check(); err != nil {
		return err
	}
	for _, s := range syms {
		if err := s.valid(); err != nil {
			return err
		}
		if s.w != w {
			return errf(ErrInvalidArg, "symmetric object of another World")
		}
	}
	return nil
}

// putAll puts src's local elements [0, n) to dst at element dstAt on every PE
// (the local copy by memory), then completes the puts.
func putAll[T Elem](ctx context.Context, w *World, dst Sym[T], dstAt int, src Sym[T], n int) error {
	if n == 0 {
		return nil
	}
	data := src.Local()[:n]
	for i := 1; i < w.n; i++ {
		pe := (w.me + i) % w.n
		if err := w.coll.d.put(ctx, pe, dst.off+uint64(dstAt*sizeOf[T]()), bytesOf(data), true); err != nil {
			return err
		}
	}
	copy(dst.Local()[dstAt:dstAt+n], data)
	return w.coll.d.quiet(ctx)
}

// Broadcast copies the first n elements of src at root into dst on every PE
// (shmem_broadcast; root's dst too). Every PE calls it with the same arguments.
func Broadcast[T Elem](ctx context.Context, w *World, dst, src Sym[T], n, root int) error {
	const op = "shmem_broadcast"
	if err := checkColl(w, dst, src); err != nil {
		return opErr(op, err)
	}
	if err := w.checkPE(root); err != nil {
		return opErr(op, err)
	}
	if n < 0 || n > dst.n || n > src.n {
		return opErr(op, errf(ErrOutOfRange, "%d elements (dst %d, src %d)", n, dst.n, src.n))
	}
	if err := w.syncAll(ctx); err != nil {
		return opErr(op, err)
	}
	if w.me == root {
		if err := putAll(ctx, w, dst, 0, src, n); err != nil {
			return opErr(op, err)
		}
	}
	return opErr(op, w.syncAll(ctx))
}

// FCollect concatenates the first n elements of src of every PE, in PE order,
// into dst on every PE (shmem_fcollect); dst holds n*NPEs elements.
func FCollect[T Elem](ctx context.Context, w *World, dst, src Sym[T], n int) error {
	const op = "shmem_fcollect"
	if err := checkColl(w, dst, src); err != nil {
		return opErr(op, err)
	}
	if n < 0 || n > src.n || n*w.n > dst.n {
		return opErr(op, errf(ErrOutOfRange, "%d elements from %d PEs (dst %d, src %d)", n, w.n, dst.n, src.n))
	}
	if err := w.syncAll(ctx); err != nil {
		return opErr(op, err)
	}
	if err := putAll(ctx, w, dst, w.me*n, src, n); err != nil {
		return opErr(op, err)
	}
	return opErr(op, w.syncAll(ctx))
}

// Collect concatenates the first n elements of src of every PE, in PE order,
// into dst on every PE, where n may differ between PEs (shmem_collect). It
// returns the number of elements gathered.
func Collect[T Elem](ctx context.Context, w *World, dst, src Sym[T], n int) (int, error) {
	const op = "shmem_collect"
	if err := checkColl(w, dst, src); err != nil {
		return 0, opErr(op, err)
	}
	if n < 0 || n > src.n {
		return 0, opErr(op, errf(ErrOutOfRange, "%d elements from %d", n, src.n))
	}
	counts, err := scratchSym[int64](w, w.n)
	if err != nil {
		return 0, opErr(op, err)
	}
	defer w.releaseScratch(counts.off)
	if err := w.syncAll(ctx); err != nil {
		return 0, opErr(op, err)
	}
	counts.Local()[w.me] = int64(n)
	mine := counts.Slice(w.me, w.me+1)
	if err := putAll(ctx, w, counts, w.me, mine, 1); err != nil {
		return 0, opErr(op, err)
	}
	if err := w.syncAll(ctx); err != nil {
		return 0, opErr(op, err)
	}
	at, total := 0, 0
	for pe, c := range counts.Local() {
		if pe < w.me {
			at += int(c)
		}
		total += int(c)
	}
	var perr error
	if total > dst.n {
		// Every PE sees the same counts and fails the same way, after the barrier
		// that keeps them in step.
		perr = errf(ErrOutOfRange, "%d elements gathered into %d", total, dst.n)
	} else {
		perr = putAll(ctx, w, dst, at, src, n)
	}
	return total, opErr(op, errors.Join(perr, w.syncAll(ctx)))
}

// Alltoall sends elements [j*n, (j+1)*n) of src to PE j, which stores them at
// [me*n, (me+1)*n) of its dst (shmem_alltoall).
func Alltoall[T Elem](ctx context.Context, w *World, dst, src Sym[T], n int) error {
	const op = "shmem_alltoall"
	if err := checkColl(w, dst, src); err != nil {
		return opErr(op, err)
	}
	if n < 0 || n*w.n > dst.n || n*w.n > src.n {
		return opErr(op, errf(ErrOutOfRange, "%d elements per PE (dst %d, src %d)", n, dst.n, src.n))
	}
	if err := w.syncAll(ctx); err != nil {
		return opErr(op, err)
	}
	sz := uint64(sizeOf[T]())
	local := src.Local()
	for i := 1; i < w.n && n > 0; i++ {
		pe := (w.me + i) % w.n
		part := local[pe*n : (pe+1)*n]
		if err := w.coll.d.put(ctx, pe, dst.off+uint64(w.me*n)*sz, bytesOf(part), true); err != nil {
			return opErr(op, err)
		}
	}
	if n > 0 {
		copy(dst.Local()[w.me*n:(w.me+1)*n], local[w.me*n:(w.me+1)*n])
	}
	if err := w.coll.d.quiet(ctx); err != nil {
		return opErr(op, err)
	}
	return opErr(op, w.syncAll(ctx))
}
