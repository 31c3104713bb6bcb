package shmem

import (
	"context"
	"unsafe"
)

// Elem is the element type of symmetric objects and transfers: fixed-size
// numbers without pointers (the heap is not scanned by the garbage collector).
type Elem interface {
	~int8 | ~int16 | ~int32 | ~int64 | ~int | ~uint8 | ~uint16 | ~uint32 | ~uint64 | ~uint | ~uintptr |
		~float32 | ~float64 | ~complex64 | ~complex128
}

// Sym is a symmetric array of n elements of T: it exists at the same heap
// offset on every PE. Malloc, Calloc and Align return one; At and Slice derive
// views of part of it. A Sym made by slicing out of range carries the error,
// which the first call using it returns. The zero Sym names nothing.
type Sym[T Elem] struct {
	w   *World
	off uint64 // heap offset of element 0
	n   int
	err error
}

func sizeOf[T Elem]() int {
	var z T
	return int(unsafe.Sizeof(z))
}

// Len returns the number of elements.
func (s Sym[T]) Len() int { return s.n }

// Err returns the error of an out-of-range slicing, or nil.
func (s Sym[T]) Err() error { return s.err }

// At returns the one-element view of element i (for P, G and the atomics).
func (s Sym[T]) At(i int) Sym[T] { return s.Slice(i, i+1) }

// Slice returns the view of elements [i, j).
func (s Sym[T]) Slice(i, j int) Sym[T] {
	if s.err != nil {
		return s
	}
	if i < 0 || j < i || j > s.n {
		return Sym[T]{w: s.w, err: errf(ErrOutOfRange, "slice [%d:%d] of %d elements", i, j, s.n)}
	}
	return Sym[T]{w: s.w, off: s.off + uint64(i*sizeOf[T]()), n: j - i}
}

// valid checks that s names live heap memory of a World that is open.
func (s Sym[T]) valid() error {
	if s.err != nil {
		return s.err
	}
	if s.w == nil {
		return errf(ErrOutOfRange, "zero Sym")
	}
	if err := s.w.check(); err != nil {
		return err
	}
	if s.off+uint64(s.n*sizeOf[T]()) > uint64(len(s.w.heap)) {
		return errf(ErrOutOfRange, "outside the heap")
	}
	return nil
}

// Local returns this PE's copy of the object as a slice (nil for an invalid
// Sym). Remote PEs update it through the network: read words that others
// write with WaitUntil or Test, or after a barrier.
func (s Sym[T]) Local() []T {
	if s.valid() != nil || s.n == 0 {
		return nil
	}
	return unsafe.Slice((*T)(unsafe.Pointer(&s.w.heap[s.off])), s.n)
}

// bytesOf returns the bytes of a slice of T.
func bytesOf[T Elem](b []T) []byte {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(b))), len(b)*sizeOf[T]())
}

// Malloc allocates a symmetric array of n elements on every PE (shmem_malloc):
// a collective call that every PE makes with the same n, returning the same
// offset everywhere. The memory keeps what earlier objects there held; Calloc
// zeroes it. It ends with a barrier, so no PE accesses the object remotely
// before every PE has it.
func Malloc[T Elem](ctx context.Context, w *World, n int) (Sym[T], error) {
	return allocSym[T](ctx, w, "shmem_malloc", n, 8, false)
}

// Calloc is Malloc with the memory zeroed (shmem_calloc).
func Calloc[T Elem](ctx context.Context, w *World, n int) (Sym[T], error) {
	return allocSym[T](ctx, w, "shmem_calloc", n, 8, true)
}

// Align is Malloc with the object aligned to align bytes, a power of two
// (shmem_align).
func Align[T Elem](ctx context.Context, w *World, align, n int) (Sym[T], error) {
	if align <= 0 || align&(align-1) != 0 {
		return Sym[T]{}, opErr("shmem_align", errf(ErrInvalidArg, "alignment %d is not a power of two", align))
	}
	return allocSym[T](ctx, w, "shmem_align", n, uint64(max(align, 8)), false)
}

func allocSym[T Elem](ctx context.Context, w *World, op string, n int, align uint64, zero bool) (Sym[T], error) {
	if err := w.check(); err != nil {
		return Sym[T]{}, opErr(op, err)
	}
	size := uint64(n) * uint64(sizeOf[T]())
	if n < 0 || (n > 0 && size/uint64(n) != uint64(sizeOf[T]())) {
		return Sym[T]{}, opErr(op, errf(ErrInvalidArg, "%d elements", n))
	}
	w.amu.Lock()
	off, ok := w.alloc.allocate(size, align)
	w.amu.Unlock()
	if !ok {
		return Sym[T]{}, opErr(op, errf(ErrNoSpace, "%d bytes (heap of %d)", size, w.HeapSize()))
	}
	s := Sym[T]{w: w, off: off, n: n}
	if zero {
		clear(w.heap[off : off+size])
	}
	if err := w.syncAll(ctx); err != nil {
		return s, opErr(op, err)
	}
	return s, nil
}

// Free releases a symmetric object (shmem_free), collectively: every PE frees
// the same object. It begins with a barrier, so no PE frees memory that
// another may still access. s must be what an allocation returned, not a view.
func Free[T Elem](ctx context.Context, s Sym[T]) error {
	const op = "shmem_free"
	if err := s.valid(); err != nil {
		return opErr(op, err)
	}
	w := s.w
	w.amu.Lock()
	size, ok := w.alloc.size(s.off)
	w.amu.Unlock()
	if !ok || s.off < reserved || size < uint64(s.n*sizeOf[T]()) || w.globalOffs[s.off] {
		return opErr(op, errf(ErrInvalidArg, "not an allocated object (offset %d)", s.off))
	}
	if err := w.barrierAll(ctx); err != nil {
		return opErr(op, err)
	}
	w.amu.Lock()
	w.alloc.release(s.off)
	w.amu.Unlock()
	return nil
}
