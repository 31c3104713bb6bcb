package md

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
)

// flat is the reference model of a memory: its bytes in one slice.
func flat(iov [][]byte) []byte {
	var f []byte
	for _, b := range iov {
		f = append(f, b...)
	}
	return f
}

// layout builds an iovec list of fresh slices with the given lengths, filled with a
// pattern that differs per position.
func layout(lens ...int) [][]byte {
	iov := make([][]byte, len(lens))
	k := 0
	for i, l := range lens {
		iov[i] = make([]byte, l)
		for j := range iov[i] {
			k++
			iov[i][j] = byte(k*7 + k>>8)
		}
	}
	return iov
}

// pieceEnds returns the end offset of every non-empty piece.
func pieceEnds(iov [][]byte) []uint64 {
	var ends []uint64
	var o uint64
	for _, b := range iov {
		if len(b) > 0 {
			o += uint64(len(b))
			ends = append(ends, o)
		}
	}
	return ends
}

// contiguousModel says whether [off, off+n) lies inside one piece.
func contiguousModel(iov [][]byte, off, n uint64) bool {
	var start uint64
	for _, end := range pieceEnds(iov) {
		if off >= start && off+n <= end && off < end {
			return true
		}
		start = end
	}
	return false
}

func mustIovecs(t testing.TB, iov [][]byte) Memory {
	t.Helper()
	m, err := Iovecs(iov)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

var layouts = [][]int{
	{},
	{0},
	{1},
	{5},
	{0, 0, 3},
	{3, 0, 0},
	{1, 1, 1, 1},
	{4, 0, 7, 1, 0, 9},
	{100, 1, 100},
	{4096, 4096, 17},
}

func TestMemoryTable(t *testing.T) {
	for _, lens := range layouts {
		t.Run(fmt.Sprint(lens), func(t *testing.T) {
			iov := layout(lens...)
			ref := flat(iov)
			m := mustIovecs(t, iov)
			if m.Len() != uint64(len(ref)) || !m.IsIovec() {
				t.Fatalf("Len %d IsIovec %v, want %d true", m.Len(), m.IsIovec(), len(ref))
			}
			if got, want := m.NumSegments(), len(pieceEnds(iov)); got != want {
				t.Fatalf("NumSegments %d, want %d", got, want)
			}
			size := uint64(len(ref))
			for off := uint64(0); off <= size; off++ {
				for n := uint64(0); off+n <= size; n++ {
					checkRead(t, m, ref, off, n)
					checkSlices(t, m, ref, off, n)
					b, ok := m.Contiguous(off, n)
					want := n == 0 || contiguousModel(iov, off, n)
					if ok != want {
						t.Fatalf("Contiguous(%d,%d) ok=%v, want %v", off, n, ok, want)
					}
					if ok && !bytes.Equal(b, ref[off:off+n]) {
						t.Fatalf("Contiguous(%d,%d) = %v, want %v", off, n, b, ref[off:off+n])
					}
					if n > 64 {
						n += 37 // keep the big layouts quick
					}
				}
				if off > 64 {
					off += 53
				}
			}
			checkOutOfRange(t, m)
		})
	}
}

func checkRead(t *testing.T, m Memory, ref []byte, off, n uint64) {
	t.Helper()
	dst := make([]byte, n)
	k, err := m.ReadAt(dst, off)
	if err != nil || k != int(n) || !bytes.Equal(dst, ref[off:off+n]) {
		t.Fatalf("ReadAt(%d,%d) = %d, %v, %v; want %v", off, n, k, err, dst, ref[off:off+n])
	}
}

func checkSlices(t *testing.T, m Memory, ref []byte, off, n uint64) {
	t.Helper()
	pre := []byte{0xEE}
	s, err := m.Slices(off, n, [][]byte{pre})
	if err != nil {
		t.Fatalf("Slices(%d,%d): %v", off, n, err)
	}
	if len(s) == 0 || &s[0][0] != &pre[0] {
		t.Fatalf("Slices(%d,%d) dropped the existing entries", off, n)
	}
	got := flat(s[1:])
	if !bytes.Equal(got, ref[off:off+n]) {
		t.Fatalf("Slices(%d,%d) = %v, want %v", off, n, got, ref[off:off+n])
	}
	for _, p := range s[1:] {
		if len(p) == 0 {
			t.Fatalf("Slices(%d,%d) returned an empty piece", off, n)
		}
	}
}

func checkOutOfRange(t *testing.T, m Memory) {
	t.Helper()
	size := m.Len()
	const huge = ^uint64(0)
	for _, c := range []struct{ off, n uint64 }{{size + 1, 0}, {0, size + 1}, {size, 1}, {1, huge}, {huge, 2}} {
		keep := [][]byte{{1}}
		if s, err := m.Slices(c.off, c.n, keep); !errors.Is(err, ErrOutOfRange) || len(s) != 1 {
			t.Fatalf("Slices(%d,%d) = %v, %v; want dst unchanged and ErrOutOfRange", c.off, c.n, s, err)
		}
		if b, ok := m.Contiguous(c.off, c.n); ok || b != nil {
			t.Fatalf("Contiguous(%d,%d) = %v, %v; want nil, false", c.off, c.n, b, ok)
		}
	}
	before := make([]byte, size)
	m.ReadAt(before, 0)
	for _, c := range []struct {
		n   int
		off uint64
	}{{1, size}, {int(size) + 1, 0}, {2, size - min(size, 1)}, {1, huge}} {
		buf := bytes.Repeat([]byte{0xAB}, c.n)
		var re *RangeError
		if k, err := m.ReadAt(buf, c.off); k != 0 || !errors.As(err, &re) || re.Op != "read" {
			t.Fatalf("ReadAt(len %d, %d) = %d, %v; want a *RangeError", c.n, c.off, k, err)
		}
		if !bytes.Equal(buf, bytes.Repeat([]byte{0xAB}, c.n)) {
			t.Fatalf("failed ReadAt(len %d, %d) wrote into dst", c.n, c.off)
		}
		if k, err := m.WriteAt(buf, c.off); k != 0 || !errors.As(err, &re) || re.Op != "write" {
			t.Fatalf("WriteAt(len %d, %d) = %d, %v; want a *RangeError", c.n, c.off, k, err)
		}
	}
	after := make([]byte, size)
	m.ReadAt(after, 0)
	if !bytes.Equal(before, after) {
		t.Fatalf("failed WriteAt changed bytes: %v -> %v", before, after)
	}
}

func TestMemoryWriteAt(t *testing.T) {
	for _, lens := range layouts {
		iov := layout(lens...)
		m := mustIovecs(t, iov)
		ref := flat(iov)
		size := uint64(len(ref))
		for off := uint64(0); off <= size; off += 1 + off/8 {
			for n := uint64(0); off+n <= size; n += 1 + n/4 {
				src := make([]byte, n)
				for i := range src {
					src[i] = byte(off + uint64(i)*31 + 5)
				}
				k, err := m.WriteAt(src, off)
				if err != nil || k != int(n) {
					t.Fatalf("%v WriteAt(%d,%d) = %d, %v", lens, off, n, k, err)
				}
				copy(ref[off:], src)
				if got := flat(iov); !bytes.Equal(got, ref) {
					t.Fatalf("%v WriteAt(%d,%d): memory %v, want %v", lens, off, n, got, ref)
				}
			}
		}
	}
}

func TestBytes(t *testing.T) {
	b := []byte("hello, portals")
	m := Bytes(b)
	if m.IsIovec() || m.Len() != uint64(len(b)) || m.NumSegments() != 1 {
		t.Fatalf("Bytes: iovec %v len %d segs %d", m.IsIovec(), m.Len(), m.NumSegments())
	}
	c, ok := m.Contiguous(7, 7)
	if !ok || string(c) != "portals" || cap(c) != 7 {
		t.Fatalf("Contiguous = %q %v cap %d", c, ok, cap(c))
	}
	if _, err := m.WriteAt([]byte("P"), 7); err != nil || b[7] != 'P' {
		t.Fatalf("WriteAt did not reach the slice: %v %q", err, b)
	}
	var z Memory
	if z.Len() != 0 || z.NumSegments() != 0 || Bytes(nil).NumSegments() != 0 {
		t.Fatal("zero memory not empty")
	}
	if _, ok := z.Contiguous(0, 0); !ok {
		t.Fatal("empty range of empty memory not contiguous")
	}
}

func TestIovecsCopiesList(t *testing.T) {
	iov := layout(2, 3)
	m := mustIovecs(t, iov)
	iov[0] = []byte{9, 9, 9, 9, 9}
	if m.Len() != 5 {
		t.Fatalf("Len %d after changing the list", m.Len())
	}
	got := make([]byte, 5)
	m.ReadAt(got, 0)
	if !bytes.Equal(got, flat(layout(2, 3))) {
		t.Fatalf("memory follows the changed list: %v", got)
	}
}

func TestIovecsLimit(t *testing.T) {
	iov := make([][]byte, MaxIovecs+1)
	if _, err := Iovecs(iov); !errors.Is(err, ErrTooManyIovecs) {
		t.Fatalf("Iovecs(%d entries): %v", len(iov), err)
	}
	one := []byte{1}
	for i := range iov {
		iov[i] = one
	}
	m, err := Iovecs(iov[:MaxIovecs])
	if err != nil || m.Len() != MaxIovecs || m.NumSegments() != MaxIovecs {
		t.Fatalf("Iovecs(MaxIovecs): %v len %d", err, m.Len())
	}
	if b, ok := m.Contiguous(MaxIovecs-1, 1); !ok || &b[0] != &one[0] {
		t.Fatal("last piece not found")
	}
}

func TestMemoryNoAllocs(t *testing.T) {
	iov := layout(100, 0, 300, 7, 4096)
	m := mustIovecs(t, iov)
	dst := make([]byte, 1000)
	pieces := make([][]byte, 0, 8)
	allocs := testing.AllocsPerRun(200, func() {
		if _, err := m.ReadAt(dst, 50); err != nil {
			t.Fatal(err)
		}
		if _, err := m.WriteAt(dst[:500], 90); err != nil {
			t.Fatal(err)
		}
		var err error
		if pieces, err = m.Slices(10, 1000, pieces[:0]); err != nil || len(pieces) != 4 {
			t.Fatal(err, len(pieces))
		}
		if _, ok := m.Contiguous(120, 200); !ok {
			t.Fatal("not contiguous")
		}
		if _, ok := m.Contiguous(90, 200); ok {
			t.Fatal("contiguous across pieces")
		}
		if _, ok := m.Contiguous(1<<40, 1); ok {
			t.Fatal("contiguous out of range")
		}
		_ = Bytes(dst)
	})
	if allocs != 0 {
		t.Fatalf("ReadAt/WriteAt/Slices/Contiguous allocate %v times per run", allocs)
	}
}
