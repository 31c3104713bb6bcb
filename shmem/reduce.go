package shmem

import "context"

// Integer is the element type of the bitwise reductions.
type Integer interface {
	~int8 | ~int16 | ~int32 | ~int64 | ~int | ~uint8 | ~uint16 | ~uint32 | ~uint64 | ~uint | ~uintptr
}

// Ordered is the element type of the min and max reductions.
type Ordered interface {
	Integer | ~float32 | ~float64
}

// Number is the element type of the sum and product reductions.
type Number interface {
	Ordered | ~complex64 | ~complex128
}

// reduce combines element-wise the first n elements of src of every PE with f
// into dst on every PE: every PE gathers all contributions into a symmetric
// temporary, then combines them locally, in PE order (so every PE computes
// the same floating-point result).
func reduce[T Elem](ctx context.Context, op string, w *World, dst, src Sym[T], n int, f func(a, b T) T) error {
	if err := checkColl(w, dst, src); err != nil {
		return opErr(op, err)
	}
	if n < 0 || n > dst.n || n > src.n {
		return opErr(op, errf(ErrOutOfRange, "%d elements (dst %d, src %d)", n, dst.n, src.n))
	}
	tmp, err := scratchSym[T](w, n*w.n)
	if err != nil {
		return opErr(op, err)
	}
	defer w.releaseScratch(tmp.off)
	if err := w.syncAll(ctx); err != nil {
		return opErr(op, err)
	}
	if err := putAll(ctx, w, tmp, w.me*n, src, n); err != nil {
		return opErr(op, err)
	}
	if err := w.syncAll(ctx); err != nil {
		return opErr(op, err)
	}
	all := tmp.Local()
	out := dst.Local()
	for i := 0; i < n; i++ {
		acc := all[i]
		for pe := 1; pe < w.n; pe++ {
			acc = f(acc, all[pe*n+i])
		}
		out[i] = acc
	}
	return nil
}

// AndReduce stores in dst on every PE the bitwise and of src over all PEs
// (shmem_and_reduce), element by element for n elements.
func AndReduce[T Integer](ctx context.Context, w *World, dst, src Sym[T], n int) error {
	return reduce(ctx, "shmem_and_reduce", w, dst, src, n, func(a, b T) T { return a & b })
}

// OrReduce is the bitwise or reduction (shmem_or_reduce).
func OrReduce[T Integer](ctx context.Context, w *World, dst, src Sym[T], n int) error {
	return reduce(ctx, "shmem_or_reduce", w, dst, src, n, func(a, b T) T { return a | b })
}

// XorReduce is the bitwise exclusive-or reduction (shmem_xor_reduce).
func XorReduce[T Integer](ctx context.Context, w *World, dst, src Sym[T], n int) error {
	return reduce(ctx, "shmem_xor_reduce", w, dst, src, n, func(a, b T) T { return a ^ b })
}

// MinReduce is the minimum reduction (shmem_min_reduce).
func MinReduce[T Ordered](ctx context.Context, w *World, dst, src Sym[T], n int) error {
	return reduce(ctx, "shmem_min_reduce", w, dst, src, n, func(a, b T) T { return min(a, b) })
}

// MaxReduce is the maximum reduction (shmem_max_reduce).
func MaxReduce[T Ordered](ctx context.Context, w *World, dst, src Sym[T], n int) error {
	return reduce(ctx, "shmem_max_reduce", w, dst, src, n, func(a, b T) T { return max(a, b) })
}

// SumReduce is the sum reduction (shmem_sum_reduce).
func SumReduce[T Number](ctx context.Context, w *World, dst, src Sym[T], n int) error {
	return reduce(ctx, "shmem_sum_reduce", w, dst, src, n, func(a, b T) T { return a + b })
}

// ProdReduce is the product reduction (shmem_prod_reduce).
func ProdReduce[T Number](ctx context.Context, w *World, dst, src Sym[T], n int) error {
	return reduce(ctx, "shmem_prod_reduce", w, dst, src, n, func(a, b T) T { return a * b })
}
