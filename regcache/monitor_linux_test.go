//go:build linux && cgo

package regcache

import (
	"errors"
	"os"
	"runtime"
	"runtime/debug"
	"testing"
	"time"
	"unsafe"

	"github.com/goportals/goportals/driverhooks"
	"golang.org/x/sys/unix"
)

// newRealCache returns a cache over a private userfaultfd monitor and reg, with the
// page-frame oracle on when it can be (root).
func newRealCache[R any](t testing.TB, reg Registrar[R], o Options) (*Cache[R], *driverhooks.Monitor) {
	t.Helper()
	m, err := driverhooks.Open()
	if errors.Is(err, driverhooks.ErrNotSupported) {
		t.Skip("userfaultfd unavailable: " + err.Error())
	}
	if err != nil {
		t.Fatal(err)
	}
	o.Source = driverhooks.NewNotifier(m)
	if os.Geteuid() == 0 {
		o.CheckPFN = true
	}
	c, err := New[R](reg, o)
	if err != nil {
		m.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Close()
		if s := c.Stats(); s.StaleHits != 0 {
			t.Errorf("%d stale hits", s.StaleHits)
		}
		m.Close()
	})
	return c, m
}

func mmapAt(t testing.TB, at unsafe.Pointer, n int, flags int) []byte {
	t.Helper()
	r, err := unix.MmapPtr(-1, 0, at, uintptr(n)*pageSize, unix.PROT_READ|unix.PROT_WRITE,
		unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|flags)
	if err != nil {
		t.Fatalf("mmap: %v", err)
	}
	if at != nil && r != at {
		t.Fatalf("mmap at %p gave %p", at, r)
	}
	b := unsafe.Slice((*byte)(r), n*int(pageSize))
	for i := range b {
		b[i] = byte(i >> 12)
	}
	return b
}

// remapFreed maps n fresh pages at at, an address just freed. Another thread may
// have mapped something there meanwhile (the runtime, the race detector): then it
// returns nil and the caller starts over.
func remapFreed(t testing.TB, at unsafe.Pointer, n int) []byte {
	t.Helper()
	r, err := unix.MmapPtr(-1, 0, at, uintptr(n)*pageSize, unix.PROT_READ|unix.PROT_WRITE,
		unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_FIXED_NOREPLACE)
	if errors.Is(err, unix.EEXIST) || (err == nil && r != at) {
		if err == nil {
			unix.MunmapPtr(r, uintptr(n)*pageSize)
		}
		return nil
	}
	if err != nil {
		t.Fatalf("mmap: %v", err)
	}
	return unsafe.Slice((*byte)(r), n*int(pageSize))
}

func munmapRange(t testing.TB, at unsafe.Pointer, n int) {
	t.Helper()
	if err := unix.MunmapPtr(at, uintptr(n)*pageSize); err != nil {
		t.Fatalf("munmap: %v", err)
	}
}

func ptr(b []byte) unsafe.Pointer { return unsafe.Pointer(unsafe.SliceData(b)) }

// acquireMiss acquires b and checks that it was a miss (the change was seen).
func acquireMiss[R any](t *testing.T, c *Cache[R], b []byte, old *Region[R]) {
	t.Helper()
	before := c.Stats()
	r, err := c.Acquire(b)
	if err != nil {
		t.Fatal(err)
	}
	defer mustRelease(t, c, r)
	if r == old || c.Stats().Misses != before.Misses+1 {
		t.Fatal("acquire after the change hit the old entry")
	}
	if !r.Cached() {
		t.Fatal("watched anonymous memory was not cached")
	}
}

// The registrar records without pinning: mlock would make madvise(DONTNEED/FREE) fail
// with EINVAL, while a NIC's long-term pin does not stop it.
func TestMonitorInvalidates(t *testing.T) {
	const n = 8
	p := int(pageSize)
	cases := []struct {
		name string
		// change alters the pages of b and returns memory at the old address to acquire,
		// and the parts of b's address range the test still has mapped (nil after, nil
		// kept: the freed address was taken by someone else).
		change func(t *testing.T, b []byte) (after []byte, kept [][]byte)
	}{
		{"munmap", func(t *testing.T, b []byte) ([]byte, [][]byte) {
			a := ptr(b)
			munmapRange(t, a, n)
			after := remapFreed(t, a, n)
			return after, [][]byte{after}
		}},
		{"partial-munmap", func(t *testing.T, b []byte) ([]byte, [][]byte) {
			munmapRange(t, ptr(b[2*p:]), 2)
			// Pages 2 and 3 are free now, and may be someone else's by the end.
			return b[:p], [][]byte{b[:2*p], b[4*p:]}
		}},
		{"madv-dontneed", func(t *testing.T, b []byte) ([]byte, [][]byte) {
			if err := unix.Madvise(b[p:3*p], unix.MADV_DONTNEED); err != nil {
				t.Fatal(err)
			}
			return b[p : 2*p], [][]byte{b}
		}},
		{"madv-free", func(t *testing.T, b []byte) ([]byte, [][]byte) {
			if err := unix.Madvise(b, unix.MADV_FREE); err != nil {
				t.Fatal(err)
			}
			return b, [][]byte{b}
		}},
		{"mremap", func(t *testing.T, b []byte) ([]byte, [][]byte) {
			a := ptr(b)
			dst := mmapAt(t, nil, n, 0) // a free destination
			r, err := unix.MremapPtr(a, uintptr(len(b)), ptr(dst), uintptr(len(b)),
				unix.MREMAP_MAYMOVE|unix.MREMAP_FIXED)
			if err != nil || r != ptr(dst) {
				t.Fatalf("mremap: %v", err)
			}
			t.Cleanup(func() { munmapRange(t, r, n) })
			after := remapFreed(t, a, n)
			return after, [][]byte{after}
		}},
		{"mmap-fixed", func(t *testing.T, b []byte) ([]byte, [][]byte) {
			return mmapAt(t, ptr(b[p:]), 2, unix.MAP_FIXED)[:p], [][]byte{b}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := newRealCache[fakeReg](t, newFakeRegistrar(), Options{})
			for try := 0; ; try++ {
				b := mmapAt(t, nil, n, 0)
				r, err := c.Acquire(b)
				if err != nil {
					t.Fatal(err)
				}
				if !r.Cached() {
					t.Fatal("anonymous memory was not cached")
				}
				mustRelease(t, c, r)
				after, kept := tc.change(t, b)
				if after == nil { // the freed address was taken: start over elsewhere
					if try == 10 {
						t.Fatal("the freed address was taken by another mapping 10 times")
					}
					continue
				}
				acquireMiss(t, c, after, r)
				if s := c.Stats(); s.Invalidations == 0 {
					t.Fatalf("no invalidation counted: %+v", s)
				}
				// Only what the test still has mapped: a part it unmapped may be
				// someone else's (the runtime's, the race detector's) by now.
				for _, k := range kept {
					munmapRange(t, ptr(k), len(k)/p)
				}
				return
			}
		})
	}
}

func TestRemapSameAddressMisses(t *testing.T) {
	c, _ := newRealCache[Pin](t, MlockRegistrar{}, Options{})
	b := mmapAt(t, nil, 4, 0)
	a := ptr(b)
	r, err := c.Acquire(b)
	if err != nil {
		t.Fatal(err)
	}
	mustRelease(t, c, r)
	for i, lost := 0, 0; i < 20; i++ {
		munmapRange(t, a, 4)
		if b = remapFreed(t, a, 4); b == nil {
			// Another thread mapped the freed address: go on from a new one.
			if lost++; lost == 10 {
				t.Fatal("the freed address was taken by another mapping 10 times")
			}
			b = mmapAt(t, nil, 4, 0)
			a = ptr(b)
			if r, err = c.Acquire(b); err != nil {
				t.Fatal(err)
			}
			mustRelease(t, c, r)
			continue
		}
		acquireMiss(t, c, b, r)
	}
	munmapRange(t, a, 4)
}

func TestInUseInvalidatedByMadvise(t *testing.T) {
	c, _ := newRealCache[fakeReg](t, newFakeRegistrar(), Options{})
	b := mmapAt(t, nil, 4, 0)
	a := ptr(b)
	r, err := c.Acquire(b)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Madvise(b, unix.MADV_DONTNEED); err != nil {
		t.Fatal(err)
	}
	acquireMiss(t, c, b, r)
	if err := c.Release(r); err != nil {
		t.Fatal(err)
	}
	if s := c.Stats(); s.StaleInUse != 1 {
		t.Fatalf("stats %+v", s)
	}
	munmapRange(t, a, 4)
}

func TestFileBackedFallsBack(t *testing.T) {
	c, _ := newRealCache[Pin](t, MlockRegistrar{}, Options{})
	f, err := os.CreateTemp(t.TempDir(), "fb")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(int64(pageSize)); err != nil {
		t.Fatal(err)
	}
	fm, err := unix.Mmap(int(f.Fd()), 0, int(pageSize), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(fm)
	r, err := c.Acquire(fm)
	if err != nil {
		t.Fatal(err)
	}
	if r.Cached() {
		t.Fatal("file-backed memory was cached without a watch")
	}
	mustRelease(t, c, r)
	if c.Stats().Fallbacks != 1 {
		t.Fatal("fallback not counted")
	}
}

// GOMAXPROCS=1 with FreeOSMemory while Go memory is cached and watched must not
// deadlock (see driverhooks' package documentation). The watchdog is a generous bound, not a measurement.
func TestNoDeadlockFreeOSMemory(t *testing.T) {
	c, m := newRealCache[Pin](t, MlockRegistrar{}, Options{MaxEntries: 64})
	n := driverhooks.NewNotifier(m)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	done := make(chan error, 1)
	go func() {
		for i := 0; i < 300; i++ {
			buf := make([]byte, 256<<10)
			buf[i] = 1
			r, err := c.Acquire(buf[4096 : 200<<10])
			if err != nil {
				done <- err
				return
			}
			if err := c.Release(r); err != nil {
				done <- err
				return
			}
			if i%4 == 0 {
				c.Flush() // drop references so the scavenger may release the pages
			}
			// Watch a garbage buffer too, as another user of the monitor would: the
			// scavenger's madvise of it must wait for the reader.
			junk := make([]byte, 1<<20)
			junk[0] = 1
			ja := (uintptr(unsafe.Pointer(&junk[0])) + pageSize - 1) &^ (pageSize - 1)
			_ = n.Watch(ja, 128*pageSize)
			runtime.KeepAlive(junk)
			junk = nil
			debug.FreeOSMemory()
		}
		done <- nil
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(3 * time.Minute):
		t.Fatal("watchdog: 300 rounds of FreeOSMemory did not finish in 3 minutes (deadlock)")
	}
	if s := m.Stats(); s.Events == 0 {
		t.Fatalf("no userfaultfd event: the scavenger path was not exercised (%+v)", s)
	}
}

// Two caches on one monitor watching the same memory: one cache evicting its entry
// must not blind the other.
func TestTwoCachesShareWatches(t *testing.T) {
	m, err := driverhooks.Open()
	if errors.Is(err, driverhooks.ErrNotSupported) {
		t.Skip("userfaultfd unavailable: " + err.Error())
	}
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	n := driverhooks.NewNotifier(m)
	c1, err := New[fakeReg](newFakeRegistrar(), Options{Source: n})
	if err != nil {
		t.Fatal(err)
	}
	defer c1.Close()
	c2, err := New[fakeReg](newFakeRegistrar(), Options{Source: n})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	b := mmapAt(t, nil, 4, 0)
	defer munmapRange(t, ptr(b), 4)
	r1, err := c1.Acquire(b)
	if err != nil {
		t.Fatal(err)
	}
	if err := c1.Release(r1); err != nil {
		t.Fatal(err)
	}
	r2, err := c2.Acquire(b)
	if err != nil {
		t.Fatal(err)
	}
	if err := c2.Release(r2); err != nil {
		t.Fatal(err)
	}
	if !r1.Cached() || !r2.Cached() {
		t.Fatal("watched anonymous memory was not cached")
	}
	c1.Flush() // c1 lets its watch go
	if err := unix.Madvise(b, unix.MADV_DONTNEED); err != nil {
		t.Fatal(err)
	}
	acquireMiss(t, c2, b, r2)
}

// The oracle itself: with a notifier that misses a change (the fake reports nothing),
// the next hit sees new page frames, counts a stale hit, reports it and re-registers.
func TestOracleCatchesMissedChange(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("reading page frames from /proc/self/pagemap needs root")
	}
	var reported int
	c, err := New[fakeReg](newFakeRegistrar(), Options{
		Source:   newFakeSource(),
		CheckPFN: true,
		OnStale:  func(addr, length uintptr, pages int) { reported += pages },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	b := mmapAt(t, nil, 2, 0)
	defer munmapRange(t, ptr(b), 2)
	r1, err := c.Acquire(b)
	if err != nil {
		t.Fatal(err)
	}
	mustRelease(t, c, r1)
	// The kernel may hand the freed frame straight back to the next fault, which
	// would leave nothing for the oracle to see. A pipe holding the old page (vmsplice
	// takes a page reference) keeps that frame allocated, so the fault below must get
	// another one.
	release := holdPage(t, b[:pageSize])
	defer release()
	oracle, err := driverhooks.OpenPFNOracle()
	if err != nil {
		t.Fatal(err)
	}
	defer oracle.Close()
	before, err := oracle.Snapshot(uintptr(ptr(b)), pageSize)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Madvise(b[:pageSize], unix.MADV_DONTNEED); err != nil { // unseen by the fake
		t.Fatal(err)
	}
	b[0] = 1 // fault in a new frame
	if changed, err := oracle.Verify(uintptr(ptr(b)), before, uintptr(ptr(b)), pageSize); err != nil || changed != 1 {
		t.Fatalf("the refault kept the held frame (changed pages %d, err %v): the test's premise failed", changed, err)
	}
	r2, err := c.Acquire(b)
	if err != nil {
		t.Fatal(err)
	}
	defer mustRelease(t, c, r2)
	s := c.Stats()
	if s.StaleHits != 1 || reported != 1 || r2 == r1 || s.Misses != 2 {
		t.Fatalf("stale hit not caught: stats %+v reported %d same=%v", s, reported, r2 == r1)
	}
	if s.StaleInUse != 0 {
		t.Fatalf("oracle drop counted as stale-in-use: %+v", s)
	}
}

// holdPage takes a reference on the frames behind page by splicing them into a pipe,
// so that they stay allocated (and cannot back a later fault) until release.
func holdPage(t *testing.T, page []byte) (release func()) {
	t.Helper()
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatalf("pipe: %v", err)
	}
	iov := []unix.Iovec{{Base: &page[0]}}
	iov[0].SetLen(len(page))
	n, err := unix.Vmsplice(p[1], iov, 0)
	if err != nil || n != len(page) {
		unix.Close(p[0])
		unix.Close(p[1])
		t.Fatalf("vmsplice: %d bytes, %v", n, err)
	}
	return func() {
		unix.Close(p[0])
		unix.Close(p[1])
	}
}
