package shmem

import "context"

// checkRMA validates a transfer of n elements with the symmetric object s at pe.
func checkRMA[T Elem](c *Ctx, s Sym[T], n, pe int) error {
	if err := c.check(); err != nil {
		return err
	}
	if err := s.valid(); err != nil {
		return err
	}
	if s.w != c.w {
		return errf(ErrInvalidArg, "symmetric object of another World")
	}
	if err := c.w.checkPE(pe); err != nil {
		return err
	}
	if n > s.n {
		return errf(ErrOutOfRange, "%d elements into an object of %d", n, s.n)
	}
	return nil
}

// Put copies src into dst at pe (shmem_put): it returns once src may be
// reused; the data is visible at pe after Quiet (or a barrier).
func Put[T Elem](ctx context.Context, c *Ctx, dst Sym[T], src []T, pe int) error {
	const op = "shmem_put"
	if err := checkRMA(c, dst, len(src), pe); err != nil {
		return opErr(op, err)
	}
	return opErr(op, c.d.put(ctx, pe, dst.off, bytesOf(src), false))
}

// PutNBI starts copying src into dst at pe (shmem_put_nbi): src must not change
// until Quiet returns.
func PutNBI[T Elem](ctx context.Context, c *Ctx, dst Sym[T], src []T, pe int) error {
	const op = "shmem_put_nbi"
	if err := checkRMA(c, dst, len(src), pe); err != nil {
		return opErr(op, err)
	}
	return opErr(op, c.d.put(ctx, pe, dst.off, bytesOf(src), true))
}

// Get copies len(dst) elements of src at pe into dst (shmem_get) and returns
// once they are there.
func Get[T Elem](ctx context.Context, c *Ctx, dst []T, src Sym[T], pe int) error {
	const op = "shmem_get"
	if err := checkRMA(c, src, len(dst), pe); err != nil {
		return opErr(op, err)
	}
	return opErr(op, c.d.get(ctx, pe, src.off, bytesOf(dst), false))
}

// GetNBI starts copying len(dst) elements of src at pe into dst
// (shmem_get_nbi); dst holds them once Quiet returns.
func GetNBI[T Elem](ctx context.Context, c *Ctx, dst []T, src Sym[T], pe int) error {
	const op = "shmem_get_nbi"
	if err := checkRMA(c, src, len(dst), pe); err != nil {
		return opErr(op, err)
	}
	return opErr(op, c.d.get(ctx, pe, src.off, bytesOf(dst), true))
}

// P writes one element, v, to dst (its first element) at pe (shmem_p).
func P[T Elem](ctx context.Context, c *Ctx, dst Sym[T], v T, pe int) error {
	const op = "shmem_p"
	if err := checkRMA(c, dst, 1, pe); err != nil {
		return opErr(op, err)
	}
	b := [1]T{v}
	return opErr(op, c.d.put(ctx, pe, dst.off, bytesOf(b[:]), false))
}

// G reads one element, the first of src, at pe (shmem_g).
func G[T Elem](ctx context.Context, c *Ctx, src Sym[T], pe int) (T, error) {
	const op = "shmem_g"
	var b [1]T
	if err := checkRMA(c, src, 1, pe); err != nil {
		return b[0], opErr(op, err)
	}
	err := c.d.get(ctx, pe, src.off, bytesOf(b[:]), false)
	return b[0], opErr(op, err)
}

// checkStrides validates a strided transfer of n elements.
func checkStrides(n, dstStride, srcStride, dstLen, srcLen int) error {
	if n < 0 || dstStride < 1 || srcStride < 1 {
		return errf(ErrInvalidArg, "n %d, strides %d and %d (strides must be at least 1)", n, dstStride, srcStride)
	}
	if n == 0 {
		return nil
	}
	if (n-1)*dstStride >= dstLen {
		return errf(ErrOutOfRange, "%d elements at stride %d in %d", n, dstStride, dstLen)
	}
	if (n-1)*srcStride >= srcLen {
		return errf(ErrOutOfRange, "%d elements at stride %d from %d", n, srcStride, srcLen)
	}
	return nil
}

// IPut copies n elements of src, every srcStride-th, to every dstStride-th
// element of dst at pe (shmem_iput). Strides are in elements.
func IPut[T Elem](ctx context.Context, c *Ctx, dst Sym[T], src []T, dstStride, srcStride, n, pe int) error {
	const op = "shmem_iput"
	if err := checkRMA(c, dst, 0, pe); err != nil {
		return opErr(op, err)
	}
	if err := checkStrides(n, dstStride, srcStride, dst.n, len(src)); err != nil {
		return opErr(op, err)
	}
	if dstStride == 1 && srcStride == 1 {
		return opErr(op, c.d.put(ctx, pe, dst.off, bytesOf(src[:n]), false))
	}
	sz := uint64(sizeOf[T]())
	for i := 0; i < n; i++ {
		if err := c.d.put(ctx, pe, dst.off+uint64(i*dstStride)*sz, bytesOf(src[i*srcStride:i*srcStride+1]), false); err != nil {
			return opErr(op, err)
		}
	}
	return nil
}

// IGet copies n elements of src at pe, every srcStride-th, to every
// dstStride-th element of dst (shmem_iget).
func IGet[T Elem](ctx context.Context, c *Ctx, dst []T, src Sym[T], dstStride, srcStride, n, pe int) error {
	const op = "shmem_iget"
	if err := checkRMA(c, src, 0, pe); err != nil {
		return opErr(op, err)
	}
	if err := checkStrides(n, dstStride, srcStride, len(dst), src.n); err != nil {
		return opErr(op, err)
	}
	if dstStride == 1 && srcStride == 1 {
		return opErr(op, c.d.get(ctx, pe, src.off, bytesOf(dst[:n]), false))
	}
	sz := uint64(sizeOf[T]())
	for i := 0; i < n; i++ {
		if err := c.d.get(ctx, pe, src.off+uint64(i*srcStride)*sz, bytesOf(dst[i*dstStride:i*dstStride+1]), true); err != nil {
			return opErr(op, err)
		}
	}
	return opErr(op, c.d.quiet(ctx))
}

// SignalOp is how PutSignal updates the signal word.
type SignalOp uint8

// Signal operations (SHMEM_SIGNAL_*).
const (
	SignalSet SignalOp = iota // SHMEM_SIGNAL_SET: the word becomes the value
	SignalAdd                 // SHMEM_SIGNAL_ADD: the value is added to the word
)

// PutSignal copies src into dst at pe and then updates the signal word sig at
// pe (shmem_put_signal): a PE that sees the signal (WaitUntil on sig) sees
// the data. It returns once src may be reused.
func PutSignal[T Elem](ctx context.Context, c *Ctx, dst Sym[T], src []T, sig Sym[uint64], value uint64, sop SignalOp, pe int) error {
	return putSignal(ctx, "shmem_put_signal", c, dst, src, sig, value, sop, pe, false)
}

// PutSignalNBI is PutSignal that may return before src may be reused
// (shmem_put_signal_nbi): src must not change until Quiet returns.
func PutSignalNBI[T Elem](ctx context.Context, c *Ctx, dst Sym[T], src []T, sig Sym[uint64], value uint64, sop SignalOp, pe int) error {
	return putSignal(ctx, "shmem_put_signal_nbi", c, dst, src, sig, value, sop, pe, true)
}

func putSignal[T Elem](ctx context.Context, op string, c *Ctx, dst Sym[T], src []T, sig Sym[uint64], value uint64, sop SignalOp, pe int, nbi bool) error {
	if err := checkRMA(c, dst, len(src), pe); err != nil {
		return opErr(op, err)
	}
	if err := checkRMA(c, sig, 1, pe); err != nil {
		return opErr(op, err)
	}
	if sop != SignalSet && sop != SignalAdd {
		return opErr(op, errf(ErrInvalidArg, "signal operation %d", sop))
	}
	if err := c.d.put(ctx, pe, dst.off, bytesOf(src), nbi); err != nil {
		return opErr(op, err)
	}
	// The data is complete at the target before the signal leaves (SOS orders
	// them with a fence the same way).
	if err := c.d.quiet(ctx); err != nil {
		return opErr(op, err)
	}
	v := [1]uint64{value}
	if sop == SignalSet {
		return opErr(op, c.d.put(ctx, pe, sig.off, bytesOf(v[:]), false))
	}
	return opErr(op, c.d.atomic(ctx, pe, sig.off, amoSum, bytesOf(v[:])))
}

// SignalFetch returns the local value of the signal word sig
// (shmem_signal_fetch).
func SignalFetch(sig Sym[uint64]) (uint64, error) {
	if err := checkWait(sig, CmpEQ); err != nil || sig.n == 0 {
		return 0, opErr("shmem_signal_fetch", orEmpty(err, sig.n))
	}
	return uint64(load(sig, 0)), nil
}

// SignalWaitUntil waits until the signal word sig satisfies cmp against
// value and returns its value then (shmem_signal_wait_until).
func SignalWaitUntil(ctx context.Context, sig Sym[uint64], cmp Cmp, value uint64) (uint64, error) {
	if err := WaitUntil(ctx, sig, cmp, value); err != nil {
		return 0, opErr("shmem_signal_wait_until", err)
	}
	return uint64(load(sig, 0)), nil
}
