package regcache

import (
	"errors"
	"math/rand"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/goportals/goportals/driverhooks"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func newTestCache(t *testing.T, o Options) (*Cache[fakeReg], *fakeRegistrar, *fakeSource) {
	t.Helper()
	src := newFakeSource()
	reg := newFakeRegistrar()
	o.Source = src
	c, err := New[fakeReg](reg, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Close()
		if n := reg.liveCount(); n != 0 {
			t.Errorf("%d registrations leaked", n)
		}
	})
	return c, reg, src
}

func mustAcquire(t *testing.T, c *Cache[fakeReg], mem []byte) *Region[fakeReg] {
	t.Helper()
	r, err := c.Acquire(mem)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Contains(addrOf(mem), len(mem)) {
		t.Fatalf("region [%#x+%#x) does not contain [%#x+%#x)", r.Addr(), r.Len(), addrOf(mem), len(mem))
	}
	return r
}

func mustRelease[R any](t testing.TB, c *Cache[R], r *Region[R]) {
	t.Helper()
	if err := c.Release(r); err != nil {
		t.Fatal(err)
	}
}

func TestBasic(t *testing.T) {
	c, reg, _ := newTestCache(t, Options{})
	mem := pages(4)
	r1 := mustAcquire(t, c, mem[100:200])
	if !r1.Cached() || r1.Len() != int(pageSize) {
		t.Fatalf("want one cached page, got cached=%v len=%d", r1.Cached(), r1.Len())
	}
	mustRelease(t, c, r1)
	r2 := mustAcquire(t, c, mem[10:300])
	if r2 != r1 {
		t.Fatal("second acquire of the same page missed")
	}
	mustRelease(t, c, r2)
	s := c.Stats()
	if s.Hits != 1 || s.Misses != 1 || s.Entries != 1 || reg.regs != 1 {
		t.Fatalf("stats %+v regs %d", s, reg.regs)
	}
	if err := c.Release(r2); !errors.Is(err, ErrNotAcquired) {
		t.Fatalf("double release: %v", err)
	}
	if _, err := c.Acquire(nil); !errors.Is(err, ErrEmpty) {
		t.Fatalf("empty acquire: %v", err)
	}
}

func TestGetAfterUnmap(t *testing.T) {
	c, reg, src := newTestCache(t, Options{})
	mem := pages(2)
	r1 := mustAcquire(t, c, mem)
	mustRelease(t, c, r1)
	src.unmap(mem)
	r2 := mustAcquire(t, c, mem)
	if r2 == r1 {
		t.Fatal("acquire after unmap returned the invalidated entry")
	}
	mustRelease(t, c, r2)
	s := c.Stats()
	if s.Misses != 2 || s.Invalidations != 1 || reg.deregs != 1 || reg.liveCount() != 1 {
		t.Fatalf("stats %+v deregs %d live %d", s, reg.deregs, reg.liveCount())
	}
}

func TestReleaseInUse(t *testing.T) {
	c, reg, src := newTestCache(t, Options{})
	mem := pages(2)
	r1 := mustAcquire(t, c, mem)
	src.unmap(mem[:pageSize])
	r2 := mustAcquire(t, c, mem)
	if r2 == r1 {
		t.Fatal("got the invalidated in-use entry")
	}
	if reg.liveCount() != 2 {
		t.Fatalf("in-use entry deregistered early: live %d", reg.liveCount())
	}
	mustRelease(t, c, r1)
	if reg.liveCount() != 1 {
		t.Fatalf("last release of the stale entry did not deregister: live %d", reg.liveCount())
	}
	mustRelease(t, c, r2)
	if s := c.Stats(); s.StaleInUse != 1 || s.Invalidations != 1 {
		t.Fatalf("stats %+v", s)
	}
}

func TestOverlapMerge(t *testing.T) {
	c, reg, _ := newTestCache(t, Options{})
	mem := pages(4)
	p := int(pageSize)
	r1 := mustAcquire(t, c, mem[:2*p])
	mustRelease(t, c, r1)
	r2 := mustAcquire(t, c, mem[p:3*p])
	if r2.Addr() != addrOf(mem) || r2.Len() != 3*p {
		t.Fatalf("merged region [%#x+%#x), want [%#x+%#x)", r2.Addr(), r2.Len(), addrOf(mem), 3*p)
	}
	r3 := mustAcquire(t, c, mem[:p])
	if r3 != r2 {
		t.Fatal("sub-range of the merged entry missed")
	}
	mustRelease(t, c, r3)
	mustRelease(t, c, r2)
	if s := c.Stats(); s.Merges != 1 || s.Entries != 1 || reg.liveCount() != 1 {
		t.Fatalf("stats %+v live %d", s, reg.liveCount())
	}
	// Merging with an entry in use keeps that entry valid until its release.
	r4 := mustAcquire(t, c, mem[:p])
	r5 := mustAcquire(t, c, mem[2*p:])
	if r5 == r4 || r5.Len() != 4*p {
		t.Fatalf("want a merged 4-page region, got %d bytes", r5.Len())
	}
	if reg.liveCount() != 2 {
		t.Fatalf("in-use merged entry deregistered early: live %d", reg.liveCount())
	}
	mustRelease(t, c, r4)
	mustRelease(t, c, r5)
	if reg.liveCount() != 1 {
		t.Fatalf("live %d after releases", reg.liveCount())
	}
}

func TestEvictionByCount(t *testing.T) {
	c, reg, src := newTestCache(t, Options{MaxEntries: 4})
	mem := pages(12)
	p := int(pageSize)
	for i := 0; i < 6; i++ {
		r := mustAcquire(t, c, mem[2*i*p:2*i*p+1])
		mustRelease(t, c, r)
	}
	s := c.Stats()
	if s.Entries != 4 || s.Evictions != 2 || reg.liveCount() != 4 {
		t.Fatalf("stats %+v live %d", s, reg.liveCount())
	}
	// The two oldest went: acquiring the first again misses.
	r := mustAcquire(t, c, mem[:1])
	mustRelease(t, c, r)
	if s2 := c.Stats(); s2.Misses != s.Misses+1 {
		t.Fatalf("oldest entry was not the one evicted: %+v", s2)
	}
	src.mu.Lock()
	w := len(src.watched)
	src.mu.Unlock()
	if w != 4 {
		t.Fatalf("%d ranges still watched, want 4", w)
	}
}

func TestEvictionSecondChance(t *testing.T) {
	c, _, _ := newTestCache(t, Options{MaxEntries: 2})
	mem := pages(6)
	p := int(pageSize)
	a, b, d := mem[:1], mem[2*p:2*p+1], mem[4*p:4*p+1]
	mustRelease(t, c, mustAcquire(t, c, a))
	mustRelease(t, c, mustAcquire(t, c, b))
	mustRelease(t, c, mustAcquire(t, c, a)) // a used again: b is now the least recent
	mustRelease(t, c, mustAcquire(t, c, d))
	before := c.Stats()
	mustRelease(t, c, mustAcquire(t, c, a))
	if s := c.Stats(); s.Hits != before.Hits+1 {
		t.Fatalf("recently used entry was evicted: %+v", s)
	}
}

func TestEvictionBySizeInUse(t *testing.T) {
	c, reg, _ := newTestCache(t, Options{MaxBytes: uint64(4 * pageSize)})
	mem := pages(10)
	p := int(pageSize)
	var held []*Region[fakeReg]
	for i := 0; i < 4; i++ {
		held = append(held, mustAcquire(t, c, mem[2*i*p:2*i*p+1]))
	}
	r := mustAcquire(t, c, mem[8*p:8*p+1])
	if r.Cached() {
		t.Fatal("limit exceeded with every entry in use, yet the region was cached")
	}
	mustRelease(t, c, r)
	if reg.liveCount() != 4 {
		t.Fatalf("uncached region not deregistered on release: live %d", reg.liveCount())
	}
	for _, h := range held {
		mustRelease(t, c, h)
	}
	r = mustAcquire(t, c, mem[8*p:8*p+1])
	if !r.Cached() {
		t.Fatal("with unused entries to evict the region should be cached")
	}
	mustRelease(t, c, r)
	if s := c.Stats(); s.Fallbacks != 1 || s.Evictions != 1 || s.PinnedBytes > uint64(4*p) {
		t.Fatalf("stats %+v", s)
	}
}

func TestUnwatchableFallsBack(t *testing.T) {
	c, reg, src := newTestCache(t, Options{})
	src.refuse = true
	mem := pages(1)
	r := mustAcquire(t, c, mem)
	if r.Cached() {
		t.Fatal("memory the notifier refused was cached")
	}
	mustRelease(t, c, r)
	if reg.liveCount() != 0 || c.Stats().Fallbacks != 1 {
		t.Fatalf("live %d stats %+v", reg.liveCount(), c.Stats())
	}
	if err := c.Release(r); !errors.Is(err, ErrNotAcquired) {
		t.Fatalf("double release of an uncached region: %v", err)
	}
}

func TestRegisterError(t *testing.T) {
	c, reg, src := newTestCache(t, Options{})
	boom := errors.New("boom")
	reg.failErr = boom
	if _, err := c.Acquire(pages(1)); !errors.Is(err, boom) {
		t.Fatalf("registrar error lost: %v", err)
	}
	src.mu.Lock()
	defer src.mu.Unlock()
	if len(src.watched) != 0 {
		t.Fatal("failed registration left its range watched")
	}
}

func TestEnv(t *testing.T) {
	t.Setenv(EnvMaxEntries, "abc")
	if _, err := New[fakeReg](newFakeRegistrar(), Options{Source: newFakeSource()}); !errors.Is(err, ErrBadEnv) {
		t.Fatalf("bad %s: %v", EnvMaxEntries, err)
	}
	t.Setenv(EnvMaxEntries, "7")
	t.Setenv(EnvMaxBytes, "64K")
	t.Setenv(EnvDisable, "1")
	c, reg, _ := newTestCache(t, Options{})
	if n, b, _ := c.Limits(); n != 7 || b > 64<<10 {
		t.Fatalf("limits %d %d", n, b)
	}
	r := mustAcquire(t, c, pages(1))
	if r.Cached() {
		t.Fatalf("%s=1 but the region was cached", EnvDisable)
	}
	mustRelease(t, c, r)
	if reg.liveCount() != 0 {
		t.Fatal("disabled cache kept a registration")
	}
	for _, v := range []string{"1", "4096", "64k", "2M", "1GiB"} {
		if _, err := parseSize(v); err != nil {
			t.Errorf("parseSize(%q): %v", v, err)
		}
	}
	for _, v := range []string{"", "x", "-1", "99999999999T"} {
		if _, err := parseSize(v); err == nil {
			t.Errorf("parseSize(%q) accepted", v)
		}
	}
}

func TestCloseWithHeldRegion(t *testing.T) {
	c, reg, _ := newTestCache(t, Options{})
	r := mustAcquire(t, c, pages(1))
	c.Close()
	if reg.liveCount() != 1 {
		t.Fatal("held region deregistered by Close")
	}
	if _, err := c.Acquire(pages(1)); !errors.Is(err, ErrClosed) {
		t.Fatalf("acquire after close: %v", err)
	}
	mustRelease(t, c, r)
	if reg.liveCount() != 0 {
		t.Fatal("release after close did not deregister")
	}
}

func TestHitAllocatesNothing(t *testing.T) {
	c, _, _ := newTestCache(t, Options{})
	mem := pages(1)
	mustRelease(t, c, mustAcquire(t, c, mem))
	before := c.Stats()
	var failed error
	a := testing.AllocsPerRun(1000, func() {
		r, err := c.Acquire(mem)
		if err == nil {
			err = c.Release(r)
		}
		if err != nil && failed == nil {
			failed = err
		}
	})
	if failed != nil {
		t.Fatal(failed)
	}
	if s := c.Stats(); s.Misses != before.Misses {
		t.Fatalf("the measured acquires missed: %+v", s)
	}
	if a != 0 {
		t.Fatalf("a hit allocates %v times", a)
	}
}

// Many goroutines acquire overlapping ranges while others invalidate: no registration
// is leaked, none is deregistered twice (the fake checks), and every returned region
// contains the request.
func TestConcurrentChurn(t *testing.T) {
	c, _, src := newTestCache(t, Options{MaxEntries: 16})
	mem := pages(64)
	p := int(pageSize)
	var wg, inval sync.WaitGroup
	stop := make(chan struct{})
	var unmaps atomic.Int64
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(seed int64) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(seed))
			for i := 0; i < 3000 || unmaps.Load() < 200; i++ {
				off := rng.Intn(60 * p)
				n := 1 + rng.Intn(3*p)
				b := mem[off : off+n]
				r, err := c.Acquire(b)
				if err != nil {
					t.Error(err)
					return
				}
				if !r.Contains(addrOf(b), len(b)) {
					t.Errorf("region does not contain the request")
				}
				if err := c.Release(r); err != nil {
					t.Error(err)
					return
				}
			}
		}(int64(g))
	}
	inval.Add(1)
	go func() {
		defer inval.Done()
		rng := rand.New(rand.NewSource(99))
		for {
			select {
			case <-stop:
				return
			default:
			}
			off := rng.Intn(62) * p
			src.unmap(mem[off : off+p])
			unmaps.Add(1)
			runtime.Gosched()
		}
	}()
	wg.Wait()
	close(stop)
	inval.Wait()
	if s := c.Stats(); s.Hits == 0 || s.Invalidations == 0 {
		t.Fatalf("churn did not exercise hits and invalidations: %+v", s)
	}
}

// Go objects whose pages extend past the object (and past its span) must register
// whole pages without tripping the -race checkptr checks.
func TestGoObjectsOddSizes(t *testing.T) {
	c, reg, _ := newTestCache(t, Options{})
	var keep [][]byte
	for _, n := range []int{1, 100, 4095, 4097, 50000, 300001} {
		b := make([]byte, n)
		keep = append(keep, b)
		r := mustAcquire(t, c, b)
		if r.Addr()%pageSize != 0 || r.Len()%int(pageSize) != 0 {
			t.Fatalf("region [%#x+%#x) not page-granular", r.Addr(), r.Len())
		}
		mustRelease(t, c, r)
	}
	if reg.liveCount() == 0 {
		t.Fatal("nothing cached")
	}
	runtimeKeepAlive(keep)
}

// With no monitor (no cgo, userfaultfd refused) nothing is trusted: every Acquire is
// a per-operation registration.
func TestNoMonitorNeverCaches(t *testing.T) {
	reg := newFakeRegistrar()
	c, err := New[fakeReg](reg, Options{Source: driverhooks.NewNotifier(nil)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	mem := pages(1)
	for i := 0; i < 3; i++ {
		r := mustAcquire(t, c, mem)
		if r.Cached() {
			t.Fatal("unwatched memory was cached")
		}
		mustRelease(t, c, r)
	}
	if s := c.Stats(); s.Fallbacks != 3 || s.Hits != 0 || reg.liveCount() != 0 {
		t.Fatalf("stats %+v live %d", s, reg.liveCount())
	}
}
