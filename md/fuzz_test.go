package md

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzMemoryCopy builds a random iovec layout and runs random ReadAt, WriteAt, Slices
// and Contiguous calls against it and against the flattened model.
//
// Input: byte 0 = number of pieces (mod 17); then one byte per piece = its length (mod
// 40, so empty pieces occur); the rest are operations of 4 bytes: kind, offset, length,
// fill. Offsets and lengths range a little past the end, to exercise the bounds checks.
func FuzzMemoryCopy(f *testing.F) {
	f.Add([]byte{3, 5, 0, 7, 0, 2, 6, 1, 1, 4, 9, 3, 2, 0, 12, 0, 3, 1, 4, 0})
	f.Add([]byte{1, 39, 1, 0, 39, 7, 0, 0, 40, 0})
	f.Add([]byte{16, 1, 2, 3, 0, 0, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 2, 0, 90, 0, 1, 3, 77, 5})
	f.Add([]byte{0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		npieces := int(data[0] % 17)
		data = data[1:]
		lens := make([]int, npieces)
		for i := range lens {
			if len(data) > 0 {
				lens[i] = int(data[0] % 40)
				data = data[1:]
			}
		}
		iov := layout(lens...)
		m, err := Iovecs(iov)
		if err != nil {
			t.Fatal(err)
		}
		model := flat(iov)
		size := uint64(len(model))
		if m.Len() != size {
			t.Fatalf("Len %d, model %d", m.Len(), size)
		}
		var pieces [][]byte
		for ; len(data) >= 4; data = data[4:] {
			kind, off, n, fill := data[0]%4, uint64(data[1])%(size+3), uint64(data[2])%(size+3), data[3]
			inRange := off <= size && n <= size-off
			switch kind {
			case 0: // ReadAt
				dst := bytes.Repeat([]byte{fill}, int(n))
				k, err := m.ReadAt(dst, off)
				if !inRange {
					if k != 0 || !errors.Is(err, ErrOutOfRange) || !bytes.Equal(dst, bytes.Repeat([]byte{fill}, int(n))) {
						t.Fatalf("ReadAt(%d,%d) out of range: %d, %v", off, n, k, err)
					}
					continue
				}
				if err != nil || k != int(n) || !bytes.Equal(dst, model[off:off+n]) {
					t.Fatalf("ReadAt(%d,%d) = %d, %v, %v; model %v", off, n, k, err, dst, model[off:off+n])
				}
			case 1: // WriteAt
				src := make([]byte, n)
				for i := range src {
					src[i] = fill + byte(i)
				}
				k, err := m.WriteAt(src, off)
				if !inRange {
					if k != 0 || !errors.Is(err, ErrOutOfRange) {
						t.Fatalf("WriteAt(%d,%d) out of range: %d, %v", off, n, k, err)
					}
					continue
				}
				if err != nil || k != int(n) {
					t.Fatalf("WriteAt(%d,%d) = %d, %v", off, n, k, err)
				}
				copy(model[off:], src)
			case 2: // Slices
				var err error
				pieces, err = m.Slices(off, n, pieces[:0])
				if !inRange {
					if len(pieces) != 0 || !errors.Is(err, ErrOutOfRange) {
						t.Fatalf("Slices(%d,%d) out of range: %d pieces, %v", off, n, len(pieces), err)
					}
					continue
				}
				if err != nil || !bytes.Equal(flat(pieces), model[off:off+n]) {
					t.Fatalf("Slices(%d,%d) = %v, %v; model %v", off, n, pieces, err, model[off:off+n])
				}
				for _, p := range pieces {
					if len(p) == 0 {
						t.Fatalf("Slices(%d,%d) gave an empty piece", off, n)
					}
				}
				if n > 0 && len(pieces) > 1 && contiguousModel(iov, off, n) {
					t.Fatalf("Slices(%d,%d) split a range that lies in one piece", off, n)
				}
			case 3: // Contiguous
				b, ok := m.Contiguous(off, n)
				want := inRange && (n == 0 || contiguousModel(iov, off, n))
				if ok != want {
					t.Fatalf("Contiguous(%d,%d) ok=%v, model %v", off, n, ok, want)
				}
				if ok && !bytes.Equal(b, model[off:off+n]) {
					t.Fatalf("Contiguous(%d,%d) = %v, model %v", off, n, b, model[off:off+n])
				}
			}
		}
		if got := flat(iov); !bytes.Equal(got, model) {
			t.Fatalf("memory %v, model %v", got, model)
		}
	})
}
