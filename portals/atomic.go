package portals

import (
	"unsafe"
)

// Numeric are the Go types whose atomics the library computes: Portals' integer,
// floating and complex datatypes. int and uint are 64-bit here.
type Numeric interface {
	~int8 | ~uint8 | ~int16 | ~uint16 | ~int32 | ~uint32 | ~int64 | ~uint64 | ~int | ~uint |
		~float32 | ~float64 | ~complex64 | ~complex128
}

// Datatype returns the Portals datatype of T (Int32 for int32, Double for
// float64, ...).
func Datatype[T Numeric]() AtomicType {
	var z T
	switch any(z).(type) {
	case int8:
		return Int8
	case uint8:
		return Uint8
	case int16:
		return Int16
	case uint16:
		return Uint16
	case int32:
		return Int32
	case uint32:
		return Uint32
	case int64, int:
		return Int64
	case uint64, uint, uintptr:
		return Uint64
	case float32:
		return Float
	case float64:
		return Double
	case complex64:
		return FloatComplex
	case complex128:
		return DoubleComplex
	}
	// Named types: decide by the underlying kind through size and a probe.
	return datatypeOfNamed[T]()
}

// datatypeOfNamed classifies a named type (type Counter int64) by its underlying
// type: integers by size and sign, floats and complexes by the arithmetic.
func datatypeOfNamed[T Numeric]() AtomicType {
	var one T = 1
	half := one / 2 // zero for integers, 0.5 for floats and complexes
	var z T
	size := unsafe.Sizeof(z)
	if half != 0 {
		switch size {
		case 4:
			return Float
		case 8:
			if isComplex(one) {
				return FloatComplex
			}
			return Double
		default:
			return DoubleComplex
		}
	}
	// (0-1)/2 is zero for a signed integer (-1/2 truncates to 0) and the largest
	// positive value for an unsigned one.
	signed := (z-one)/2 == 0
	switch size {
	case 1:
		return pick(signed, Int8, Uint8)
	case 2:
		return pick(signed, Int16, Uint16)
	case 4:
		return pick(signed, Int32, Uint32)
	}
	return pick(signed, Int64, Uint64)
}

// isComplex reports whether v (of an 8-byte floating kind) is a complex64: its
// second four bytes, the imaginary part of 1, are zero, where a float64 1.0 has
// them nonzero.
func isComplex[T Numeric](v T) bool {
	b := (*[8]byte)(unsafe.Pointer(&v))
	return b[4] == 0 && b[5] == 0 && b[6] == 0 && b[7] == 0
}

func pick(c bool, a, b AtomicType) AtomicType {
	if c {
		return a
	}
	return b
}

// AtomicOf is Span.Atomic with the datatype of T.
func AtomicOf[T Numeric](s Span, to Target, op AtomicOp, o OpOptions) error {
	return s.Atomic(to, op, Datatype[T](), o)
}

// FetchAtomicOf is Span.FetchAtomic with the datatype of T.
func FetchAtomicOf[T Numeric](s, result Span, to Target, op AtomicOp, o OpOptions) error {
	return s.FetchAtomic(result, to, op, Datatype[T](), o)
}

// SwapOf is Span.Swap with the datatype of T and its operand (the comparison value
// of a conditional swap, the mask of OpMSwap) as a T.
func SwapOf[T Numeric](s, result Span, to Target, op AtomicOp, operand T, o OpOptions) error {
	b := unsafe.Slice((*byte)(unsafe.Pointer(&operand)), unsafe.Sizeof(operand))
	return s.Swap(result, to, op, Datatype[T](), b, o)
}
