package md

import (
	"bytes"
	"errors"
	"math"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// mapPages maps n anonymous pages the test owns until it ends. Tests make pages
// inaccessible with PROT_NONE rather than unmapping them: an unmapped address can
// be mapped again by anyone at once, and a test must never touch memory it does
// not own.
func mapPages(t *testing.T, n int) []byte {
	t.Helper()
	p, err := unix.MmapPtr(-1, 0, nil, uintptr(n*4096), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.MunmapPtr(p, uintptr(n*4096)) })
	return unsafe.Slice((*byte)(p), n*4096)
}

func addrOf(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }

func TestRawBounds(t *testing.T) {
	all, err := Raw(0, math.MaxUint64)
	if err != nil || all.Len() != math.MaxUint64 || !all.IsRaw() || all.NumSegments() != 1 {
		t.Fatalf("Raw(0, max): %+v %v", all, err)
	}
	if _, err := Raw(4096, math.MaxUint64); !errors.Is(err, ErrTooLarge) {
		t.Errorf("a range past the top of the address space: %v, want ErrTooLarge", err)
	}
	top, err := Raw(^uintptr(0), 1)
	if err != nil {
		t.Fatalf("the last byte of the address space: %v", err)
	}
	var b [1]byte
	if _, err := top.ReadAt(b[:], 0); !errors.Is(err, ErrFault) {
		t.Errorf("read of the last address: %v, want ErrFault", err)
	}
	if _, err := all.ReadAt(b[:], 0); !errors.Is(err, ErrFault) {
		t.Errorf("read of address 0: %v, want ErrFault", err)
	}
	if _, err := all.ReadAt(b[:], math.MaxUint64); !errors.Is(err, ErrOutOfRange) {
		t.Errorf("read past the end: %v, want ErrOutOfRange", err)
	}
}

func TestRawReadWriteAllOfMemory(t *testing.T) {
	pages := mapPages(t, 2)
	for i := range pages {
		pages[i] = byte(i)
	}
	all, _ := Raw(0, math.MaxUint64)
	a := uint64(addrOf(pages))
	got := make([]byte, 100)
	if n, err := all.ReadAt(got, a+4000); err != nil || n != 100 || !bytes.Equal(got, pages[4000:4100]) {
		t.Fatalf("read across the page boundary: %d %v", n, err)
	}
	if _, err := all.WriteAt([]byte("hello"), a+10); err != nil || string(pages[10:15]) != "hello" {
		t.Fatalf("write: %v %q", err, pages[10:15])
	}
	if p, ok := all.Addr(a + 7); !ok || uint64(p) != a+7 {
		t.Errorf("Addr(%#x) = %#x %v", a+7, p, ok)
	}
	s, err := all.Slices(a, 16, nil)
	if err != nil || len(s) != 1 || addrOf(s[0]) != uintptr(a) || len(s[0]) != 16 {
		t.Errorf("Slices: %v %v", s, err)
	}
	// A range that starts elsewhere: offsets are relative to it.
	sub, _ := Raw(uintptr(a)+4096, 4096)
	if _, err := sub.ReadAt(got[:8], 0); err != nil || !bytes.Equal(got[:8], pages[4096:4104]) {
		t.Errorf("read of a sub-range: %v", err)
	}
}
