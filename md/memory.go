package md

import "fmt"

// MaxIovecs bounds the entries of an iovec list given to Iovecs (like IOV_MAX, but
// larger: Portals MDs often describe scattered application buffers). A longer list is
// refused with an error matching ErrTooManyIovecs.
const MaxIovecs = 1 << 16

// segment is one non-empty piece of an iovec memory and its offset in the whole.
type segment struct {
	b   []byte
	off uint64
}

// Memory is what a memory descriptor, match entry or list entry binds: one []byte,
// an iovec list ([][]byte), or memory from Alloc. It is a small value that refers to
// the caller's memory (nothing is copied); the caller must keep that memory valid and
// not move it while the Memory is in use. Offsets are counted across the whole list, as
// Portals counts them in an iovec MD. An iovec memory keeps the offset of each piece,
// so finding the piece that holds an offset takes O(log n).
//
// The zero Memory is empty. A Memory is immutable and safe for concurrent use; the bytes
// it refers to are not synchronized.
type Memory struct {
	one   []byte    // the single segment of a Bytes memory (segs == nil)
	segs  []segment // the non-empty segments of an iovec memory, in order
	n     uint64
	iovec bool
	raw   bool    // a raw address range (Raw): base, n
	base  uintptr // the first address of a raw memory
}

// Bytes returns the memory of b. It allocates nothing.
func Bytes(b []byte) Memory {
	return Memory{one: b, n: uint64(len(b))}
}

// Iovecs returns the memory of the concatenation of iov. The list is copied (the
// slices it names are not): changing iov afterwards does not change the Memory.
// Empty entries are allowed and take no room. Errors: ErrTooManyIovecs when
// len(iov) > MaxIovecs, ErrTooLarge when the total length overflows.
func Iovecs(iov [][]byte) (Memory, error) {
	if len(iov) > MaxIovecs {
		return Memory{}, fmt.Errorf("%w: %d entries, at most %d", ErrTooManyIovecs, len(iov), MaxIovecs)
	}
	k := 0
	for _, b := range iov {
		if len(b) > 0 {
			k++
		}
	}
	m := Memory{iovec: true}
	if k == 0 {
		return m, nil
	}
	m.segs = make([]segment, 0, k)
	for _, b := range iov {
		if len(b) == 0 {
			continue
		}
		if m.n+uint64(len(b)) < m.n {
			return Memory{}, fmt.Errorf("%w: iovec lengths overflow 64 bits", ErrTooLarge)
		}
		m.segs = append(m.segs, segment{b: b, off: m.n})
		m.n += uint64(len(b))
	}
	return m, nil
}

// Len returns the length in bytes.
func (m Memory) Len() uint64 { return m.n }

// IsIovec reports whether the memory was made from an iovec list (Iovecs), even one
// with a single entry.
func (m Memory) IsIovec() bool { return m.iovec }

// NumSegments returns the number of contiguous non-empty pieces the memory consists of
// (0 for an empty memory).
func (m Memory) NumSegments() int {
	if m.raw {
		if m.n == 0 {
			return 0
		}
		return 1
	}
	if m.segs != nil {
		return len(m.segs)
	}
	if m.n == 0 {
		return 0
	}
	return 1
}

// seg returns segment i.
func (m *Memory) seg(i int) []byte {
	if m.segs == nil {
		return m.one
	}
	return m.segs[i].b
}

// locate returns the segment holding byte off (off < m.n) and off's position in it.
func (m *Memory) locate(off uint64) (int, uint64) {
	if m.segs == nil {
		return 0, off
	}
	// Largest i with segs[i].off <= off; segs[0].off == 0.
	lo, hi := 0, len(m.segs)
	for hi-lo > 1 {
		mid := int(uint(lo+hi) >> 1)
		if m.segs[mid].off <= off {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo, off - m.segs[lo].off
}

// ReadAt copies len(dst) bytes starting at offset off into dst, across iovec
// boundaries, and returns len(dst). The whole range must lie inside the memory:
// otherwise nothing is copied and the error is a *RangeError (ErrOutOfRange). On raw
// memory an unmapped address fails with ErrFault. It allocates nothing on success.
func (m Memory) ReadAt(dst []byte, off uint64) (int, error) {
	if m.raw {
		return m.rawReadAt(dst, off)
	}
	n := uint64(len(dst))
	if err := checkRange("read", off, n, m.n); err != nil {
		return 0, err
	}
	if n == 0 {
		return 0, nil
	}
	i, in := m.locate(off)
	done := 0
	for done < len(dst) {
		done += copy(dst[done:], m.seg(i)[in:])
		i, in = i+1, 0
	}
	return done, nil
}

// WriteAt copies src into the memory starting at offset off, across iovec boundaries,
// and returns len(src). The whole range must lie inside the memory: otherwise nothing
// is copied and the error is a *RangeError (ErrOutOfRange). On raw memory an
// unmapped or read-only address fails with ErrFault (bytes before it may have been
// written). It allocates nothing on success.
func (m Memory) WriteAt(src []byte, off uint64) (int, error) {
	if m.raw {
		return m.rawWriteAt(src, off)
	}
	n := uint64(len(src))
	if err := checkRange("write", off, n, m.n); err != nil {
		return 0, err
	}
	if n == 0 {
		return 0, nil
	}
	i, in := m.locate(off)
	done := 0
	for done < len(src) {
		done += copy(m.seg(i)[in:], src[done:])
		i, in = i+1, 0
	}
	return done, nil
}

// Slices appends to dst the contiguous pieces of the memory that cover [off, off+n),
// in order, and returns the extended slice. The pieces alias the memory. It allocates
// nothing when dst has room. n == 0 appends nothing. An out-of-range request returns
// dst unchanged and a *RangeError (ErrOutOfRange).
func (m Memory) Slices(off, n uint64, dst [][]byte) ([][]byte, error) {
	if m.raw {
		return m.rawSlices(off, n, dst)
	}
	if err := checkRange("slices", off, n, m.n); err != nil {
		return dst, err
	}
	if n == 0 {
		return dst, nil
	}
	i, in := m.locate(off)
	for n > 0 {
		s := m.seg(i)[in:]
		if uint64(len(s)) > n {
			s = s[:n]
		}
		dst = append(dst, s)
		n -= uint64(len(s))
		i, in = i+1, 0
	}
	return dst, nil
}

// Contiguous returns the single slice holding [off, off+n) and true when that range lies
// inside one piece of the memory. It returns nil and false when the range spans pieces
// or lies outside the memory. n == 0 gives nil and true for any off <= Len. It allocates
// nothing.
func (m Memory) Contiguous(off, n uint64) ([]byte, bool) {
	if m.raw {
		return m.rawContiguous(off, n)
	}
	if off > m.n || n > m.n-off {
		return nil, false
	}
	if n == 0 {
		return nil, true
	}
	i, in := m.locate(off)
	s := m.seg(i)
	if uint64(len(s))-in < n {
		return nil, false
	}
	return s[in : in+n : in+n], true
}
