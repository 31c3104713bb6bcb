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

// explicitOnly is a notifier Source that claims to watch every range but only carries
// explicit invalidations (driverhooks.Invalidate): a cache over it learns of Free only
// because Free notifies.
type explicitOnly struct{ sub driverhooks.Subscription }

func (explicitOnly) Watch(addr, length uintptr) error      { return nil }
func (explicitOnly) Unwatch(addr, length uintptr) error    { return nil }
func (e explicitOnly) Subscribe() driverhooks.Subscription { return e.sub }

// remapAt maps anonymous memory exactly where the unmapped slice at was.
func remapAt(t *testing.T, at []byte) []byte {
	t.Helper()
	n := len(at)
	want := unsafe.Pointer(unsafe.SliceData(at))
	p, err := unix.MmapPtr(-1, 0, want, uintptr(n), unix.PROT_READ|unix.PROT_WRITE,
		unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_FIXED_NOREPLACE)
	if err != nil {
		t.Skipf("cannot map again at %p (MAP_FIXED_NOREPLACE): %v", want, err)
	}
	if p != want {
		unix.MunmapPtr(p, uintptr(n))
		t.Skipf("kernel ignored MAP_FIXED_NOREPLACE (got %p, want %p)", p, want)
	}
	t.Cleanup(func() { unix.MunmapPtr(p, uintptr(n)) })
	return unsafe.Slice((*byte)(p), n)
}
