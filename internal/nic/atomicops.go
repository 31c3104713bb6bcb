package nic

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/goportals/goportals/eq"
)

// Atomic arithmetic of the engine. The target applies an operation element by
// element, in host byte order, serialized by the engine lock of the NI, to the whole
// elements the matched length holds (a trailing partial element is left alone);
// fetching forms copy the old contents out first. The conditional swaps compare the
// operand with the target and swap when "operand OP target" holds (CSWAP: equal);
// MSWAP replaces the bits the operand selects. LONG_DOUBLE and LONG_DOUBLE_COMPLEX
// are the platform's C long double (16 bytes on the wire): they are computed in C
// (atomicops_longdouble_cgo.go) and not supported in a build without cgo.

// checkAtomic validates an operation on a datatype and length; swap says whether it
// comes through PtlSwap, which takes exactly the swap operations (SWAP, the
// conditional swaps, MSWAP), while PtlAtomic and PtlFetchAtomic take exactly the
// others.
func checkAtomic(op AtomicOp, dt AtomicType, length uint64, swap bool) error {
	if !op.Valid() || !dt.Valid() {
		return fmt.Errorf("atomic op %d / type %d undefined", op, dt)
	}
	sz := uint64(dt.Size())
	isInt := dt <= eq.Uint32 || dt == eq.Int64 || dt == eq.Uint64
	isComplex := dt == eq.FloatComplex || dt == eq.DoubleComplex || dt == eq.LongDoubleComplex
	switch op {
	case eq.OpLOr, eq.OpLAnd, eq.OpLXor, eq.OpBOr, eq.OpBAnd, eq.OpBXor, eq.OpMSwap:
		if !isInt {
			return fmt.Errorf("%v needs an integer type, not %v", op, dt)
		}
	case eq.OpMin, eq.OpMax, eq.OpCSwapLE, eq.OpCSwapLT, eq.OpCSwapGE, eq.OpCSwapGT:
		if isComplex {
			return fmt.Errorf("%v is undefined on %v", op, dt)
		}
	}
	if op >= eq.OpSwap && !swap {
		return fmt.Errorf("%v needs PtlSwap", op)
	}
	if op < eq.OpSwap && swap {
		return fmt.Errorf("%v is not a swap operation", op)
	}
	if op >= eq.OpCSwap && length > sz {
		// The operand is one element: as in the reference, any length up to it.
		return fmt.Errorf("%v works on at most one element", op)
	}
	if dt == eq.LongDouble || dt == eq.LongDoubleComplex {
		if err := longDoubleSupport(); err != nil {
			return err
		}
	}
	return nil
}

// num is one element widened to a computable form.
type num struct {
	i    int64
	u    uint64
	f    float64
	c    complex128
	kind byte // 'i', 'u', 'f', 'c'
}

func load(dt AtomicType, b []byte) num {
	le := binary.LittleEndian
	switch dt {
	case eq.Int8:
		return num{i: int64(int8(b[0])), kind: 'i'}
	case eq.Uint8:
		return num{u: uint64(b[0]), kind: 'u'}
	case eq.Int16:
		return num{i: int64(int16(le.Uint16(b))), kind: 'i'}
	case eq.Uint16:
		return num{u: uint64(le.Uint16(b)), kind: 'u'}
	case eq.Int32:
		return num{i: int64(int32(le.Uint32(b))), kind: 'i'}
	case eq.Uint32:
		return num{u: uint64(le.Uint32(b)), kind: 'u'}
	case eq.Int64:
		return num{i: int64(le.Uint64(b)), kind: 'i'}
	case eq.Uint64:
		return num{u: le.Uint64(b), kind: 'u'}
	case eq.Float:
		return num{f: float64(math.Float32frombits(le.Uint32(b))), kind: 'f'}
	case eq.Double:
		return num{f: math.Float64frombits(le.Uint64(b)), kind: 'f'}
	case eq.FloatComplex:
		return num{c: complex(float64(math.Float32frombits(le.Uint32(b))), float64(math.Float32frombits(le.Uint32(b[4:])))), kind: 'c'}
	default: // DoubleComplex
		return num{c: complex(math.Float64frombits(le.Uint64(b)), math.Float64frombits(le.Uint64(b[8:]))), kind: 'c'}
	}
}

func store(dt AtomicType, b []byte, v num) {
	le := binary.LittleEndian
	switch dt {
	case eq.Int8:
		b[0] = byte(v.i)
	case eq.Uint8:
		b[0] = byte(v.u)
	case eq.Int16:
		le.PutUint16(b, uint16(v.i))
	case eq.Uint16:
		le.PutUint16(b, uint16(v.u))
	case eq.Int32:
		le.PutUint32(b, uint32(v.i))
	case eq.Uint32:
		le.PutUint32(b, uint32(v.u))
	case eq.Int64:
		le.PutUint64(b, uint64(v.i))
	case eq.Uint64:
		le.PutUint64(b, v.u)
	case eq.Float:
		le.PutUint32(b, math.Float32bits(float32(v.f)))
	case eq.Double:
		le.PutUint64(b, math.Float64bits(v.f))
	case eq.FloatComplex:
		le.PutUint32(b, math.Float32bits(float32(real(v.c))))
		le.PutUint32(b[4:], math.Float32bits(float32(imag(v.c))))
	default:
		le.PutUint64(b, math.Float64bits(real(v.c)))
		le.PutUint64(b[8:], math.Float64bits(imag(v.c)))
	}
}

// cmp compares a and b of the same kind: -1, 0 or 1.
func cmp(a, b num) int {
	switch a.kind {
	case 'i':
		return sign(a.i < b.i, a.i > b.i)
	case 'u':
		return sign(a.u < b.u, a.u > b.u)
	case 'f':
		return sign(a.f < b.f, a.f > b.f)
	}
	if a.c == b.c {
		return 0
	}
	return 1
}

func sign(lt, gt bool) int {
	switch {
	case lt:
		return -1
	case gt:
		return 1
	}
	return 0
}

func truth(a num) bool { return a.i != 0 || a.u != 0 }

func boolNum(kind byte, t bool) num {
	if t {
		return num{i: 1, u: 1, kind: kind}
	}
	return num{kind: kind}
}

// applyAtomic applies op of datatype dt to the whole elements that dst and the
// operand data src both hold, with, for the conditional swaps and MSWAP, the
// comparison value or mask cond (one element). It returns the number of bytes it
// applied, a multiple of the element size: the mlength of the operation.
func applyAtomic(op AtomicOp, dt AtomicType, dst, src, cond []byte) int {
	sz := dt.Size()
	if sz == 0 {
		return 0
	}
	n := min(len(dst), len(src))
	n -= n % sz
	if n == 0 || (op >= eq.OpCSwap && len(cond) < sz) {
		return 0
	}
	if dt == eq.LongDouble || dt == eq.LongDoubleComplex {
		if longDoubleSupport() != nil {
			return 0 // refused by checkAtomic first
		}
		applyLongDouble(op, dt, dst[:n], src[:n], cond[:min(len(cond), sz)])
		return n
	}
	for off := 0; off < n; off += sz {
		d, s := dst[off:off+sz], src[off:off+sz]
		a, b := load(dt, d), load(dt, s)
		var r num
		switch op {
		case eq.OpMin:
			r = a
			if cmp(b, a) < 0 {
				r = b
			}
		case eq.OpMax:
			r = a
			if cmp(b, a) > 0 {
				r = b
			}
		case eq.OpSum:
			r = num{i: a.i + b.i, u: a.u + b.u, f: a.f + b.f, c: a.c + b.c, kind: a.kind}
		case eq.OpProd:
			r = num{i: a.i * b.i, u: a.u * b.u, f: a.f * b.f, c: a.c * b.c, kind: a.kind}
		case eq.OpLOr:
			r = boolNum(a.kind, truth(a) || truth(b))
		case eq.OpLAnd:
			r = boolNum(a.kind, truth(a) && truth(b))
		case eq.OpLXor:
			r = boolNum(a.kind, truth(a) != truth(b))
		case eq.OpBOr:
			r = num{i: a.i | b.i, u: a.u | b.u, kind: a.kind}
		case eq.OpBAnd:
			r = num{i: a.i & b.i, u: a.u & b.u, kind: a.kind}
		case eq.OpBXor:
			r = num{i: a.i ^ b.i, u: a.u ^ b.u, kind: a.kind}
		case eq.OpSwap:
			r = b
		case eq.OpMSwap:
			m := load(dt, cond)
			r = num{i: (a.i &^ m.i) | (b.i & m.i), u: (a.u &^ m.u) | (b.u & m.u), kind: a.kind}
		default: // conditional swaps: compare the operand with the target
			c := cmp(load(dt, cond), a)
			swap := false
			switch op {
			case eq.OpCSwap:
				swap = c == 0
			case eq.OpCSwapNE:
				swap = c != 0
			case eq.OpCSwapLE:
				swap = c <= 0
			case eq.OpCSwapLT:
				swap = c < 0
			case eq.OpCSwapGE:
				swap = c >= 0
			case eq.OpCSwapGT:
				swap = c > 0
			}
			r = a
			if swap {
				r = b
			}
		}
		store(dt, d, r)
	}
	return n
}
