package mdreg

import (
	"errors"
	"fmt"
	"math"
	"testing"
	"unsafe"

	"github.com/goportals/goportals/driverhooks"
	"github.com/goportals/goportals/internal/verbs"
	"github.com/goportals/goportals/internal/verbs/loopback"
	"github.com/goportals/goportals/md"
	"github.com/goportals/goportals/regcache"
	"golang.org/x/sys/unix"
)

func TestRawFaultsAreErrors(t *testing.T) {
	pages := mapPages(t, 3)
	a := addrOf(pages)
	// The middle page is inaccessible, the last read-only.
	if err := unix.Mprotect(pages[4096:8192], unix.PROT_NONE); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mprotect(pages[8192:], unix.PROT_READ); err != nil {
		t.Fatal(err)
	}
	all, _ := md.Raw(0, math.MaxUint64)
	buf := make([]byte, 64)
	if _, err := all.ReadAt(buf, uint64(a)+4096+8); !errors.Is(err, md.ErrFault) {
		t.Errorf("read of an inaccessible page: %v, want ErrFault", err)
	}
	if _, err := all.ReadAt(buf, uint64(a)+4096-32); !errors.Is(err, md.ErrFault) {
		t.Errorf("read running into an inaccessible page: %v, want ErrFault", err)
	}
	if _, err := all.WriteAt(buf, uint64(a)+8192); !errors.Is(err, md.ErrFault) {
		t.Errorf("write to a read-only page: %v, want ErrFault", err)
	}
	if _, err := all.ReadAt(buf, uint64(a)+8192); err != nil {
		t.Errorf("read of a read-only page: %v", err)
	}
	// Pinning the inaccessible page fails with an error; nothing stays held.
	pair := newPair(t, loopbackEnv)
	r := newRegistry(t, pair.A.PD, regcache.Options{})
	if p, err := r.Pin(all, uint64(a)+4096, 64); err == nil {
		p.Release()
		t.Logf("the loopback provider pins without touching the pages")
	}
	if r.Outstanding() != 0 {
		t.Errorf("a failed pin left %d pins", r.Outstanding())
	}
}

func TestRawPinOnlyTheTransfer(t *testing.T) {
	pages := mapPages(t, 4)
	pair := newPair(t, loopbackEnv)
	r := newRegistry(t, pair.A.PD, regcache.Options{})
	all, _ := md.Raw(0, math.MaxUint64)
	a := uint64(addrOf(pages))
	p, err := r.Pin(all, a+100, 5000)
	if err != nil {
		t.Fatal(err)
	}
	defer mustRelease(t, p)
	sg := p.SGEs(nil)
	if len(sg) != 1 || sg[0].Addr != a+100 || sg[0].Length != 5000 || p.Len() != 5000 {
		t.Errorf("pinned %+v (len %d), want [%#x,+5000)", sg, p.Len(), a+100)
	}
	if _, err := r.Pin(all, 0, 8); !errors.Is(err, md.ErrFault) {
		t.Errorf("pin at address 0: %v, want ErrFault", err)
	}
}

func TestAllocFreeDropsCachedPin(t *testing.T) {
	for _, c := range []struct {
		name string
		opts func() regcache.Options
	}{
		{"default-notifier", func() regcache.Options { return regcache.Options{} }},
		{"explicit-only", func() regcache.Options {
			return regcache.Options{Source: explicitOnly{sub: driverhooks.Default().Subscribe()}}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			pair := newPair(t, loopbackEnv)
			r := newRegistry(t, pair.A.PD, c.opts())
			const n = 64 << 10
			a, err := md.Alloc(n)
			if err != nil {
				t.Fatal(err)
			}
			old := a.Bytes()
			p, err := r.Pin(a.Memory(), 0, n)
			if err != nil {
				t.Fatal(err)
			}
			mustRelease(t, p)
			st := r.Stats()
			if st.Fallbacks != 0 {
				t.Skipf("the notifier cannot watch this memory here (%v): the cache does not cache it", driverhooks.DefaultErr())
			}
			if st.Misses != 1 || st.Entries != 1 {
				t.Fatalf("after the first pin: %+v", st)
			}
			if err := a.Free(); err != nil {
				t.Fatal(err)
			}
			again := remapAt(t, old)
			p, err = r.Pin(md.Bytes(again), 0, n)
			if err != nil {
				t.Fatal(err)
			}
			mustRelease(t, p)
			st2 := r.Stats()
			if st2.Hits != st.Hits || st2.Misses != st.Misses+1 || st2.Invalidations < st.Invalidations+1 {
				t.Fatalf("a pin of new memory at a freed allocation's address did not miss: before %+v after %+v", st, st2)
			}
			if err := r.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// The engine pins a range of bound memory for one operation and hands its SGEs to a
func ExampleRegistry_Pin() {
	ctx, err := loopback.Device{}.Open()
	if err != nil {
		panic(err)
	}
	defer ctx.Close()
	pd, err := ctx.AllocPD()
	if err != nil {
		panic(err)
	}
	reg, err := NewRegistry(pd, verbs.AccessLocalWrite|verbs.AccessRemoteRead, regcache.Options{})
	if err != nil {
		panic(err)
	}
	defer reg.Close()

	a, err := md.Alloc(1 << 20)
	if err != nil {
		panic(err)
	}
	defer a.Free()
	m, err := md.Iovecs([][]byte{make([]byte, 4096), a.Bytes()})
	if err != nil {
		panic(err)
	}

	p, err := reg.Pin(m, 1000, 10000)
	if err != nil {
		panic(err)
	}
	sges := p.SGEs(nil)
	fmt.Println(len(sges), "SGEs,", verbs.TotalLength(sges), "bytes")
	if err := p.Release(); err != nil {
		panic(err)
	}
	fmt.Println(p.Release())
	// Output:
	// 2 SGEs, 10000 bytes
	// md: not pinned (released twice or never pinned)
}

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
