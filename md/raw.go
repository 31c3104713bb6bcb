package md

import (
	"errors"
	"fmt"
	"runtime/debug"
	"unsafe"
)

// Raw memory. A descriptor or list entry may name a range of the address space by
// address and length instead of Go memory: the C-shaped clients of Portals do, up
// to "all of memory" (address 0, length 2^64-1). Nothing is checked or pinned when
// such a Memory is made; only the bytes a transfer touches are accessed (and, for a
// long transfer, registered through the pin cache). An address that is not mapped,
// or not accessible for the access, fails that access with ErrFault: it never
// crashes the process. The caller keeps the bytes valid while they are in use, as
// for any Memory.

// ErrFault: an access to raw memory hit an address that is not mapped, or not
// accessible that way (a write to read-only memory).
var ErrFault = errors.New("md: address not mapped or not accessible")

// Raw returns the memory of the n bytes at address addr. addr+n may be 2^64 (the
// range ends at the top of the address space) but not beyond: ErrTooLarge.
func Raw(addr uintptr, n uint64) (Memory, error) {
	if uint64(addr) != 0 && n > -uint64(addr) {
		return Memory{}, fmt.Errorf("%w: [%#x,+%d) wraps around the address space", ErrTooLarge, addr, n)
	}
	return Memory{raw: true, base: addr, n: n}, nil
}

// IsRaw reports whether the memory was made by Raw.
func (m Memory) IsRaw() bool { return m.raw }

// Addr returns the address of byte off of the memory and true when the byte is in
// one contiguous piece of it (every byte of a raw or single-slice memory, of a
// non-empty iovec piece); 0 and false when off is outside.
func (m Memory) Addr(off uint64) (uintptr, bool) {
	if off >= m.n {
		return 0, false
	}
	if m.raw {
		return m.base + uintptr(off), true
	}
	i, in := m.locate(off)
	return uintptr(unsafe.Pointer(unsafe.SliceData(m.seg(i)))) + uintptr(in), true
}

// rawSlice returns the n bytes at address a as a slice (n > 0), without touching
// them. The pointer is made from the address through memory, not by a conversion
// of an integer: the address is foreign to Go.
func rawSlice(a uintptr, n uint64) []byte {
	p := *(*unsafe.Pointer)(unsafe.Pointer(&a))
	return unsafe.Slice((*byte)(p), n)
}

// rawRange checks that [off, off+n) of a raw memory is addressable as a Go slice.
func (m *Memory) rawRange(op string, off, n uint64) (uintptr, error) {
	if err := checkRange(op, off, n, m.n); err != nil {
		return 0, err
	}
	a := m.base + uintptr(off)
	if n > 0 && (a == 0 || uint64(a)+n-1 < uint64(a) || n > 1<<47) {
		return 0, fmt.Errorf("%w: %s [%#x,+%d)", ErrFault, op, a, n)
	}
	return a, nil
}

// copyGuarded copies src into dst and reports a fault on either side as
// ErrFault instead of crashing.
func copyGuarded(dst, src []byte) (err error) {
	old := debug.SetPanicOnFault(true)
	defer func() {
		debug.SetPanicOnFault(old)
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %v", ErrFault, r)
		}
	}()
	copy(dst, src)
	return nil
}

// rawReadAt is ReadAt of a raw memory.
func (m Memory) rawReadAt(dst []byte, off uint64) (int, error) {
	a, err := m.rawRange("read", off, uint64(len(dst)))
	if err != nil || len(dst) == 0 {
		return 0, err
	}
	if err := copyGuarded(dst, rawSlice(a, uint64(len(dst)))); err != nil {
		return 0, fmt.Errorf("md: read [%#x,+%d): %w", a, len(dst), err)
	}
	return len(dst), nil
}

// rawWriteAt is WriteAt of a raw memory.
func (m Memory) rawWriteAt(src []byte, off uint64) (int, error) {
	a, err := m.rawRange("write", off, uint64(len(src)))
	if err != nil || len(src) == 0 {
		return 0, err
	}
	if err := copyGuarded(rawSlice(a, uint64(len(src))), src); err != nil {
		return 0, fmt.Errorf("md: write [%#x,+%d): %w", a, len(src), err)
	}
	return len(src), nil
}

// rawSlices is Slices of a raw memory: one piece. Nothing is touched: the caller
// of Slices on raw memory accesses the piece at its own risk (see ReadAt).
func (m Memory) rawSlices(off, n uint64, dst [][]byte) ([][]byte, error) {
	a, err := m.rawRange("slices", off, n)
	if err != nil || n == 0 {
		return dst, err
	}
	return append(dst, rawSlice(a, n)), nil
}

// rawContiguous is Contiguous of a raw memory.
func (m Memory) rawContiguous(off, n uint64) ([]byte, bool) {
	a, err := m.rawRange("slices", off, n)
	if err != nil {
		return nil, false
	}
	if n == 0 {
		return nil, true
	}
	return rawSlice(a, n), true
}
