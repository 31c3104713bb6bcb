package nic

import (
	"encoding/binary"
	"sync/atomic"
	"unsafe"

	"github.com/goportals/goportals/eq"
	"github.com/goportals/goportals/md"
)

// Atomics on memory that other processes reach directly. A direct initiator applies
// an atomic with the processor's atomic instructions, one element at a time (an add
// or a swap where one exists, otherwise a compare-and-swap loop around the engine's
// own arithmetic, applyAtomic, so both compute the same thing); the target's engine
// applies the atomics that reach it the same way whenever the elements are aligned
// words of 4 or 8 bytes, so the two are atomic with respect to each other. Other
// element sizes never go direct.

// inPlaceOK reports whether an atomic of dt may be applied in place at p: an
// element of 4 or 8 bytes (not LONG_DOUBLE), aligned.
func inPlaceOK(dt AtomicType, p unsafe.Pointer) bool {
	sz := uintptr(dt.Size())
	return (sz == 4 || sz == 8) && dt != eq.LongDouble && dt != eq.LongDoubleComplex && uintptr(p)%sz == 0
}

// atomicInPlace applies op of dt element by element to mem (aligned words, see
// inPlaceOK) with the operand src and, for the conditional swaps and MSWAP, cond;
// old, if not nil, receives the previous contents. It returns the bytes applied (the
// whole elements mem and src both hold), as applyAtomic does.
func atomicInPlace(op AtomicOp, dt AtomicType, mem, src, cond, old []byte) int {
	sz := dt.Size()
	n := min(len(mem), len(src))
	n -= n % sz
	if n == 0 || (op >= eq.OpCSwap && len(cond) < sz) {
		return 0
	}
	isInt := dt <= eq.Uint32 || dt == eq.Int64 || dt == eq.Uint64
	ne := binary.NativeEndian
	var cur [8]byte
	for off := 0; off < n; off += sz {
		p := unsafe.Pointer(&mem[off])
		s := src[off : off+sz]
		if sz == 4 {
			w := (*atomic.Uint32)(p)
			var o uint32
			switch {
			case op == eq.OpSum && isInt:
				v := ne.Uint32(s)
				o = w.Add(v) - v
			case op == eq.OpSwap:
				o = w.Swap(ne.Uint32(s))
			case op == eq.OpBOr && isInt:
				o = w.Or(ne.Uint32(s))
			case op == eq.OpBAnd && isInt:
				o = w.And(ne.Uint32(s))
			default:
				for {
					o = w.Load()
					ne.PutUint32(cur[:4], o)
					applyAtomic(op, dt, cur[:4], s, cond)
					if nv := ne.Uint32(cur[:4]); nv == o || w.CompareAndSwap(o, nv) {
						break
					}
				}
			}
			if old != nil {
				ne.PutUint32(old[off:], o)
			}
			continue
		}
		w := (*atomic.Uint64)(p)
		var o uint64
		switch {
		case op == eq.OpSum && isInt:
			v := ne.Uint64(s)
			o = w.Add(v) - v
		case op == eq.OpSwap:
			o = w.Swap(ne.Uint64(s))
		case op == eq.OpBOr && isInt:
			o = w.Or(ne.Uint64(s))
		case op == eq.OpBAnd && isInt:
			o = w.And(ne.Uint64(s))
		default:
			for {
				o = w.Load()
				ne.PutUint64(cur[:8], o)
				applyAtomic(op, dt, cur[:8], s, cond)
				if nv := ne.Uint64(cur[:8]); nv == o || w.CompareAndSwap(o, nv) {
					break
				}
			}
		}
		if old != nil {
			ne.PutUint64(old[off:], o)
		}
	}
	return n
}

// targetAtomicInPlace is the target engine's way to apply an atomic to an entry's
// memory when the elements are aligned words: in place, with atomic instructions,
// so that direct initiators applying atomics to the same memory at the same time
// stay atomic with it. ok is false when the memory does not qualify (the engine
// then reads, computes and writes under its lock as before). old receives the
// previous contents of the mlen bytes.
func targetAtomicInPlace(m md.Memory, off, mlen uint64, op AtomicOp, dt AtomicType, src, cond, old []byte) (n uint64, ok bool) {
	if mlen == 0 || dt.Size() == 0 {
		return 0, false
	}
	b, ok := m.Contiguous(off, mlen)
	if !ok || !inPlaceOK(dt, unsafe.Pointer(unsafe.SliceData(b))) {
		return 0, false
	}
	if m.IsRaw() {
		// Raw memory may not be mapped: only library memory, known to be, is
		// touched without the engine's fault guard.
		if _, ok := md.LookupBacking(uintptr(unsafe.Pointer(unsafe.SliceData(b))), mlen); !ok {
			return 0, false
		}
	}
	return uint64(atomicInPlace(op, dt, b, src, cond, old)), true
}
