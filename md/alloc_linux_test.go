package md

import (
	"errors"
	"testing"
	"unsafe"

	"github.com/goportals/goportals/driverhooks"
	"golang.org/x/sys/unix"
)

func TestAllocBasics(t *testing.T) {
	for _, n := range []int{0, -1} {
		if a, err := Alloc(n); !errors.Is(err, ErrBadSize) || a != nil {
			t.Fatalf("Alloc(%d) = %v, %v; want ErrBadSize", n, a, err)
		}
	}
	ps := int(driverhooks.PageSize())
	for _, n := range []int{1, ps - 1, ps, ps + 1, 3 * ps} {
		a, err := Alloc(n)
		if err != nil {
			t.Fatalf("Alloc(%d): %v", n, err)
		}
		b := a.Bytes()
		if len(b) != n || cap(b) != n || uintptr(unsafe.Pointer(&b[0]))%uintptr(ps) != 0 {
			t.Fatalf("Alloc(%d): len %d cap %d addr %p", n, len(b), cap(b), &b[0])
		}
		for i, v := range b {
			if v != 0 {
				t.Fatalf("Alloc(%d): byte %d = %d, not zeroed", n, i, v)
			}
		}
		b[n-1] = 0x5A
		m := a.Memory()
		if m.Len() != uint64(n) || m.IsIovec() {
			t.Fatalf("Memory: len %d iovec %v", m.Len(), m.IsIovec())
		}
		if c, ok := m.Contiguous(uint64(n-1), 1); !ok || c[0] != 0x5A {
			t.Fatal("Memory does not show the allocated bytes")
		}
		if err := a.Free(); err != nil {
			t.Fatalf("Free: %v", err)
		}
		if err := a.Free(); !errors.Is(err, ErrFreed) {
			t.Fatalf("second Free: %v, want ErrFreed", err)
		}
		if a.Bytes() != nil || a.Memory().Len() != 0 {
			t.Fatal("Bytes after Free not nil")
		}
	}
}

// mapped reports whether the pages of b are mapped (msync fails with ENOMEM if not).
func mapped(b []byte) bool {
	return unix.Msync(b, unix.MS_ASYNC) == nil
}

func TestFreeInvalidatesBeforeUnmap(t *testing.T) {
	a, err := Alloc(10000)
	if err != nil {
		t.Fatal(err)
	}
	whole := a.Bytes() // for checks after Free
	want := uintptr(unsafe.Pointer(&whole[0]))
	var calls int
	orig := invalidate
	t.Cleanup(func() { invalidate = orig })
	invalidate = func(addr, length uintptr) {
		calls++
		if addr != want || length != 3*driverhooks.PageSize() {
			t.Errorf("invalidate(%#x, %d), want (%#x, %d)", addr, length, want, 3*driverhooks.PageSize())
		}
		if !mapped(whole) {
			t.Error("invalidate called after the pages were unmapped")
		}
		orig(addr, length)
	}
	if err := a.Free(); err != nil {
		t.Fatal(err)
	}
	if calls != 1 {
		t.Fatalf("Free called invalidate %d times", calls)
	}
	if mapped(whole) {
		t.Fatal("pages still mapped after Free")
	}
	if err := a.Free(); !errors.Is(err, ErrFreed) || calls != 1 {
		t.Fatalf("double Free: %v, %d invalidations", err, calls)
	}
}
