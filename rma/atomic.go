package rma

import (
	"context"
	"unsafe"

	"github.com/goportals/goportals/portals"
)

// Integer are the element types of the atomics: Go's integer types and types
// defined over them. int and uint are 64 bits here.
type Integer interface {
	~int8 | ~uint8 | ~int16 | ~uint16 | ~int32 | ~uint32 | ~int64 | ~uint64 | ~int | ~uint
}

// FetchAdd adds delta to the T at byte offset off of rank's memory and returns the
// value it held before, atomically with respect to every other atomic on that
// memory (puts and gets are not ordered with atomics). off must be a multiple of
// T's size. It returns once the old value is here.
//
// Errors: ErrBadRank, ErrOutOfRange, ErrMisaligned, ErrClosed, a *RemoteError.
func FetchAdd[T Integer](ctx context.Context, w *Window, rank int, off int64, delta T) (T, error) {
	return fetch(ctx, w, "FetchAdd", rank, off, portals.OpSum, delta, 0)
}

// CompareAndSwap replaces the T at byte offset off of rank's memory by new if it
// equals old, atomically, and returns the value it held before: the swap happened
// exactly when the returned value equals old.
//
// Errors: as FetchAdd.
func CompareAndSwap[T Integer](ctx context.Context, w *Window, rank int, off int64, old, new T) (T, error) {
	return fetch(ctx, w, "CompareAndSwap", rank, off, portals.OpCSwap, new, old)
}

// Swap stores v into the T at byte offset off of rank's memory, atomically, and
// returns the value it held before.
//
// Errors: as FetchAdd.
func Swap[T Integer](ctx context.Context, w *Window, rank int, off int64, v T) (T, error) {
	return fetch(ctx, w, "Swap", rank, off, portals.OpSwap, v, 0)
}

// fetch runs one fetching atomic: op with operand v (and comparison value cmp for a
// conditional swap) on the T at off of rank's memory; it returns the old value.
func fetch[T Integer](ctx context.Context, w *Window, name string, rank int, off int64, op portals.AtomicOp, v, cmp T) (T, error) {
	var old T
	size := int(unsafe.Sizeof(old))
	if err := w.check(name, rank, off, size); err != nil {
		return old, err
	}
	if off%int64(size) != 0 {
		return old, newError(name, rank, off, size, portals.ArgInvalid, ErrMisaligned)
	}
	if err := ctx.Err(); err != nil {
		return old, newError(name, rank, off, size, portals.OK, err)
	}
	s, err := w.getSlot()
	if err != nil {
		return old, newError(name, rank, off, size, portals.OK, err)
	}
	defer w.putSlot(s)
	*(*T)(unsafe.Pointer(&s.scratch[operandOff])) = v
	operand := s.md.Span(operandOff, uint64(size))
	result := s.md.Span(resultOff, uint64(size))
	to := w.target(rank, off)
	if op == portals.OpSum {
		err = portals.FetchAtomicOf[T](operand, result, to, op, portals.OpOptions{})
	} else {
		err = portals.SwapOf(operand, result, to, op, cmp, portals.OpOptions{})
	}
	if err != nil {
		return old, newError(name, rank, off, size, portals.OK, err)
	}
	s.due++
	if err := s.await(ctx, size); err != nil {
		return old, newError(name, rank, off, size, portals.OK, err)
	}
	return *(*T)(unsafe.Pointer(&s.scratch[resultOff])), nil
}
