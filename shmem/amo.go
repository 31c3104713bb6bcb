package shmem

import "context"

// AMOElem is the element type of the atomic memory operations: 32- and 64-bit
// integers.
type AMOElem interface {
	~int32 | ~uint32 | ~int64 | ~uint64 | ~int | ~uint
}

// checkAMO validates an atomic on the first element of s at pe.
func checkAMO[T AMOElem](c *Ctx, s Sym[T], pe int) error {
	if err := checkRMA(c, s, 1, pe); err != nil {
		return err
	}
	if s.n < 1 {
		return errf(ErrOutOfRange, "atomic on an empty object")
	}
	return nil
}

func one[T AMOElem](v T) []byte {
	b := [1]T{v}
	return bytesOf(b[:])
}

// fetchOp runs a fetching atomic and returns the old value.
func fetchOp[T AMOElem](ctx context.Context, name string, c *Ctx, s Sym[T], aop amoOp, operand, compare T, pe int) (T, error) {
	var old [1]T
	if err := checkAMO(c, s, pe); err != nil {
		return old[0], opErr(name, err)
	}
	var cmp []byte
	if aop == amoCSwap {
		cmp = one(compare)
	}
	err := c.d.fetchAtomic(ctx, pe, s.off, aop, one(operand), cmp, bytesOf(old[:]))
	return old[0], opErr(name, err)
}

// plainOp runs a non-fetching atomic; it is complete after Quiet. It waits
// (bounded by ctx) only while the context has too many operations in flight.
func plainOp[T AMOElem](ctx context.Context, name string, c *Ctx, s Sym[T], aop amoOp, operand T, pe int) error {
	if err := checkAMO(c, s, pe); err != nil {
		return opErr(name, err)
	}
	return opErr(name, c.d.atomic(ctx, pe, s.off, aop, one(operand)))
}

// AtomicFetch returns the value of the first element of s at pe
// (shmem_atomic_fetch). As SOS does, it reads with a get: a get of one
// aligned element is atomic with respect to the atomics, which the target
// applies one at a time.
func AtomicFetch[T AMOElem](ctx context.Context, c *Ctx, s Sym[T], pe int) (T, error) {
	var v [1]T
	if err := checkAMO(c, s, pe); err != nil {
		return v[0], opErr("shmem_atomic_fetch", err)
	}
	err := c.d.get(ctx, pe, s.off, bytesOf(v[:]), false)
	return v[0], opErr("shmem_atomic_fetch", err)
}

// AtomicSet sets the first element of s at pe to v (shmem_atomic_set); as in
// SOS it is a put of one aligned element.
func AtomicSet[T AMOElem](ctx context.Context, c *Ctx, s Sym[T], v T, pe int) error {
	if err := checkAMO(c, s, pe); err != nil {
		return opErr("shmem_atomic_set", err)
	}
	return opErr("shmem_atomic_set", c.d.put(ctx, pe, s.off, one(v), false))
}

// AtomicSwap sets the first element of s at pe to v and returns its old value
// (shmem_atomic_swap).
func AtomicSwap[T AMOElem](ctx context.Context, c *Ctx, s Sym[T], v T, pe int) (T, error) {
	return fetchOp(ctx, "shmem_atomic_swap", c, s, amoSwap, v, 0, pe)
}

// AtomicCompareSwap sets the first element of s at pe to v if it equals cond
// and returns its old value (shmem_atomic_compare_swap).
func AtomicCompareSwap[T AMOElem](ctx context.Context, c *Ctx, s Sym[T], cond, v T, pe int) (T, error) {
	return fetchOp(ctx, "shmem_atomic_compare_swap", c, s, amoCSwap, v, cond, pe)
}

// AtomicFetchAdd adds v to the first element of s at pe and returns the old
// value (shmem_atomic_fetch_add).
func AtomicFetchAdd[T AMOElem](ctx context.Context, c *Ctx, s Sym[T], v T, pe int) (T, error) {
	return fetchOp(ctx, "shmem_atomic_fetch_add", c, s, amoSum, v, 0, pe)
}

// AtomicFetchInc adds one (shmem_atomic_fetch_inc).
func AtomicFetchInc[T AMOElem](ctx context.Context, c *Ctx, s Sym[T], pe int) (T, error) {
	return fetchOp(ctx, "shmem_atomic_fetch_inc", c, s, amoSum, 1, 0, pe)
}

// AtomicAdd adds v to the first element of s at pe (shmem_atomic_add).
func AtomicAdd[T AMOElem](ctx context.Context, c *Ctx, s Sym[T], v T, pe int) error {
	return plainOp(ctx, "shmem_atomic_add", c, s, amoSum, v, pe)
}

// AtomicInc adds one (shmem_atomic_inc).
func AtomicInc[T AMOElem](ctx context.Context, c *Ctx, s Sym[T], pe int) error {
	return plainOp(ctx, "shmem_atomic_inc", c, s, amoSum, 1, pe)
}

// AtomicFetchAnd ands v into the first element of s at pe and returns the old
// value (shmem_atomic_fetch_and).
func AtomicFetchAnd[T AMOElem](ctx context.Context, c *Ctx, s Sym[T], v T, pe int) (T, error) {
	return fetchOp(ctx, "shmem_atomic_fetch_and", c, s, amoBAnd, v, 0, pe)
}

// AtomicAnd ands v into the first element of s at pe (shmem_atomic_and).
func AtomicAnd[T AMOElem](ctx context.Context, c *Ctx, s Sym[T], v T, pe int) error {
	return plainOp(ctx, "shmem_atomic_and", c, s, amoBAnd, v, pe)
}

// AtomicFetchOr ors v into the first element of s at pe and returns the old
// value (shmem_atomic_fetch_or).
func AtomicFetchOr[T AMOElem](ctx context.Context, c *Ctx, s Sym[T], v T, pe int) (T, error) {
	return fetchOp(ctx, "shmem_atomic_fetch_or", c, s, amoBOr, v, 0, pe)
}

// AtomicOr ors v into the first element of s at pe (shmem_atomic_or).
func AtomicOr[T AMOElem](ctx context.Context, c *Ctx, s Sym[T], v T, pe int) error {
	return plainOp(ctx, "shmem_atomic_or", c, s, amoBOr, v, pe)
}

// AtomicFetchXor xors v into the first element of s at pe and returns the old
// value (shmem_atomic_fetch_xor).
func AtomicFetchXor[T AMOElem](ctx context.Context, c *Ctx, s Sym[T], v T, pe int) (T, error) {
	return fetchOp(ctx, "shmem_atomic_fetch_xor", c, s, amoBXor, v, 0, pe)
}

// AtomicXor xors v into the first element of s at pe (shmem_atomic_xor).
func AtomicXor[T AMOElem](ctx context.Context, c *Ctx, s Sym[T], v T, pe int) error {
	return plainOp(ctx, "shmem_atomic_xor", c, s, amoBXor, v, pe)
}
