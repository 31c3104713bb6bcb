//go:build linux

package regcache

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/goportals/goportals/driverhooks"
	"github.com/goportals/goportals/internal/envknob"
	"golang.org/x/sys/unix"
)

// The cross-thread remap race: thread B munmaps a cached
// range, thread C maps new memory at the same address and writes a new generation
// tag into it, and thread A, which keeps acquiring the range from a cache over the
// notifier under test, reads the tag from the memory before each lookup. A hit whose
// registration was made for an older generation than the one A read is stale: A
// already used the new mapping, and the cache handed it the old one's registration.
// A backend with no window must show none; userfaultfd may (it learns of an munmap
// only after the range was released) and the test only reports what it sees.
//
// Between B's munmap and C's mmap the address is free, and anything else in the
// process (the Go runtime, the race detector's allocator) may map memory there. So
// the test only unmaps or writes memory it owns at that moment: B unmaps only the
// mapping C made (or the first one) once A has used it, C writes only into a mapping
// its own mmap just returned, and the run's cleanup unmaps the range only if the last
// step was a mapping rather than B's munmap. A reads at an address that may by then
// belong to someone else (that is the race), so every mapping of the run carries a
// key next to its tag (a random value of the run xor the address), and a tag counts
// only next to the key: a read of someone else's memory, or of no memory at all (a
// fault, recovered), is skipped.
//
// PTL_NOTIFIER picks one backend (ebpf, seccomp or uffd; default all that open here).
// PTL_CROSSTHREAD_SECONDS sets the run length per backend (default 2). A seccomp
// filter cannot be removed, so the seccomp run happens in a re-executed child.

const (
	crossSecondsEnv = string(envknob.CrossThreadSeconds)
	crossChildEnv   = "REGCACHE_CROSSTHREAD_CHILD" // the backend a re-executed child runs
	crossPages      = 4
)

// crossResult are the figures of one run.
type crossResult struct {
	Kind      driverhooks.Kind
	Window    bool
	Seconds   float64
	Remaps    int64 // munmap + map at the same address
	Lookups   int64 // Acquire calls by A
	Hits      int64 // Acquire calls answered from the cache
	Stale     int64 // hits on a registration older than the mapping A had read
	StaleGens int64 // generations A was handed a stale registration for
	Errors    int64 // Acquire calls that failed (the range was unmapped meanwhile)
	Moved     int64 // times the address was taken by another mapping and the run moved
	FirstLate string
}

func (r crossResult) String() string {
	return fmt.Sprintf("crossthread: kind=%s window=%v seconds=%.1f remaps=%d lookups=%d hits=%d stale=%d stale_generations=%d errors=%d moved=%d",
		r.Kind, r.Window, r.Seconds, r.Remaps, r.Lookups, r.Hits, r.Stale, r.StaleGens, r.Errors, r.Moved)
}

var crossLine = regexp.MustCompile(`crossthread: kind=(\S+) window=(\S+) seconds=(\S+) remaps=(\d+) lookups=(\d+) hits=(\d+) stale=(\d+) stale_generations=(\d+) errors=(\d+) moved=(\d+)`)

func parseCross(s string) (crossResult, bool) {
	m := crossLine.FindStringSubmatch(s)
	if m == nil {
		return crossResult{}, false
	}
	n := func(i int) int64 { v, _ := strconv.ParseInt(m[i], 10, 64); return v }
	sec, _ := strconv.ParseFloat(m[3], 64)
	return crossResult{Kind: driverhooks.Kind(m[1]), Window: m[2] == "true", Seconds: sec,
		Remaps: n(4), Lookups: n(5), Hits: n(6), Stale: n(7), StaleGens: n(8), Errors: n(9), Moved: n(10)}, true
}

// crossDuration is the run length per backend.
func crossDuration(t *testing.T) time.Duration {
	s := envknob.Get(envknob.CrossThreadSeconds)
	if s == "" {
		return 2 * time.Second
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v <= 0 {
		t.Fatalf("%s=%q: want a positive number of seconds", crossSecondsEnv, s)
	}
	return time.Duration(v * float64(time.Second))
}

// crossKinds are the backends to run, as PTL_NOTIFIER says.
func crossKinds(t *testing.T) []driverhooks.Kind {
	k, err := driverhooks.ParseKind(envknob.Get(envknob.Notifier))
	if err != nil {
		t.Fatal(err)
	}
	if k == driverhooks.KindExplicit {
		t.Skip("PTL_NOTIFIER=explicit: no backend to race")
	}
	if k != "" {
		return []driverhooks.Kind{k}
	}
	return []driverhooks.Kind{driverhooks.KindEBPF, driverhooks.KindSeccomp, driverhooks.KindUffd}
}

func TestCrossThreadRemap(t *testing.T) {
	if k := os.Getenv(crossChildEnv); k != "" {
		res, err := crossThreadRun(driverhooks.Kind(k), crossDuration(t))
		if errors.Is(err, driverhooks.ErrNotSupported) {
			t.Skip(err)
		}
		if err != nil {
			t.Fatal(err)
		}
		fmt.Println(res)
		return
	}
	for _, k := range crossKinds(t) {
		t.Run(string(k), func(t *testing.T) {
			var res crossResult
			if k == driverhooks.KindSeccomp {
				res = crossThreadChild(t, k)
			} else {
				var err error
				res, err = crossThreadRun(k, crossDuration(t))
				if errors.Is(err, driverhooks.ErrNotSupported) {
					t.Skip(err)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			t.Log(res)
			if res.FirstLate != "" {
				t.Log(res.FirstLate)
			}
			if res.Remaps < 10 {
				t.Errorf("only %d remaps in %.1f s: the race was not exercised", res.Remaps, res.Seconds)
			}
			if res.Hits == 0 {
				t.Errorf("no cache hit: the race was not exercised")
			}
			switch {
			case res.Stale > 0 && !res.Window:
				t.Errorf("%d stale hits with the %s backend, which claims no window", res.Stale, k)
			case res.Stale > 0:
				t.Logf("the %s window: %d stale hits on %d of %d remapped generations (expected, reported only)", k, res.Stale, res.StaleGens, res.Remaps)
			}
		})
	}
}

// crossThreadChild runs the race for k in a re-executed test binary.
func crossThreadChild(t *testing.T, k driverhooks.Kind) crossResult {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^TestCrossThreadRemap$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), crossChildEnv+"="+string(k))
	out, err := cmd.CombinedOutput()
	text := string(out)
	if strings.Contains(text, "--- SKIP: TestCrossThreadRemap") {
		t.Skip("child skipped:\n" + text)
	}
	res, ok := parseCross(text)
	if err != nil || !ok {
		t.Fatalf("child (%v):\n%s", err, text)
	}
	return res
}

// genReg is a registration that remembers the generation tag of the memory it was
// made for.
type genReg struct{ gen uint64 }

// genRegistrar reads the tag at registration. A range unmapped meanwhile fails, and
// so does memory that is not the run's (its key is not there) and a new mapping
// whose tag is not written yet (0).
type genRegistrar struct{ key uint64 }

func (r genRegistrar) Register(mem []byte) (genReg, error) {
	g, ok := loadTag(uintptr(unsafe.Pointer(unsafe.SliceData(mem))), r.key)
	if !ok {
		return genReg{}, errors.New("range unmapped, or not the run's memory, while registering")
	}
	if g == 0 {
		return genReg{}, errors.New("new mapping not tagged yet")
	}
	return genReg{g}, nil
}

func (genRegistrar) Deregister(genReg) error { return nil }

// A mapping of the run holds its generation tag in its first word and key^addr in
// the second.
const (
	tagOff = 0
	keyOff = 8
)

// loadTag reads the generation tag at addr; false if the page is not mapped or the
// memory there is not the run's (the key word is not key^addr). The calling
// goroutine must have called debug.SetPanicOnFault(true). The loads are plain ones:
// under the race detector an atomic load runs in its C runtime, where a fault cannot
// become a panic but kills the process. A plain aligned load is not torn, and the
// lookup that follows it is a call the compiler does not move it past.
func loadTag(addr uintptr, key uint64) (v uint64, ok bool) {
	defer func() {
		if recover() != nil {
			v, ok = 0, false
		}
	}()
	p := unsafe.Add(unsafe.Pointer(nil), addr)
	v = *(*uint64)(unsafe.Add(p, tagOff))
	if *(*uint64)(unsafe.Add(p, keyOff)) != key^uint64(addr) {
		return 0, false
	}
	return v, true
}

// storeTag tags the mapping at addr with generation v. Only for a mapping the
// caller's mmap returned and nobody can have unmapped since: the stores are atomic
// ones, which run in the race detector's C runtime, where a fault kills the process.
// The key goes first, so that a tag is never seen without it.
func storeTag(addr uintptr, key, v uint64) {
	p := unsafe.Add(unsafe.Pointer(nil), addr)
	atomic.StoreUint64((*uint64)(unsafe.Add(p, keyOff)), key^uint64(addr))
	atomic.StoreUint64((*uint64)(unsafe.Add(p, tagOff)), v)
}

func rawMmapAt(addr uintptr, flags int) (uintptr, error) {
	p, _, e := unix.Syscall6(unix.SYS_MMAP, addr, crossPages*pageSize, unix.PROT_READ|unix.PROT_WRITE,
		uintptr(unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|flags), ^uintptr(0), 0)
	if e != 0 {
		return 0, e
	}
	return p, nil
}

func rawMunmapRange(addr uintptr) error {
	if _, _, e := unix.Syscall(unix.SYS_MUNMAP, addr, crossPages*pageSize, 0); e != 0 {
		return e
	}
	return nil
}

// crossThreadRun races threads A, B and C for d over a cache on a new backend k.
func crossThreadRun(k driverhooks.Kind, d time.Duration) (res crossResult, err error) {
	b, err := driverhooks.OpenBackend(k)
	if err != nil {
		return res, err
	}
	defer b.Close()
	res.Kind, res.Window = k, b.Window()
	key := rand.Uint64()
	c, err := New[genReg](genRegistrar{key}, Options{Source: driverhooks.NewNotifier(b), MaxEntries: 64})
	if err != nil {
		return res, err
	}
	defer c.Close()

	base, err := rawMmapAt(0, 0)
	if err != nil {
		return res, err
	}
	storeTag(base, key, 1)
	var (
		addr      atomic.Uintptr // where the range is now
		owned     atomic.Bool    // the test's mapping is at addr (false from B's munmap to C's mmap)
		gen       atomic.Uint64  // the tag of the current mapping
		cachedGen atomic.Uint64  // the last generation A was handed from the cache
		unmapping atomic.Bool    // B is unmapping: C may map again
		unmapped  atomic.Bool    // B's munmap returned
		stop      atomic.Bool
		wg        sync.WaitGroup
		mu        sync.Mutex
		firstErr  error
	)
	addr.Store(base)
	owned.Store(true)
	gen.Store(1)
	fail := func(err error) {
		mu.Lock()
		if firstErr == nil {
			firstErr = err
		}
		mu.Unlock()
		stop.Store(true)
	}
	start := time.Now()
	wg.Add(3)
	go func() { // A: look up, and judge every hit against the tag read before it
		defer wg.Done()
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
		var lastStale uint64
		for !stop.Load() {
			a := addr.Load()
			seen, ok := loadTag(a, key)
			if !ok || seen == 0 {
				continue // unmapped, someone else's memory, or ours and not tagged yet
			}
			res.Lookups++
			before := c.st.hits.Load()
			r, err := c.Acquire(unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(nil), a)), crossPages*pageSize))
			if err != nil {
				res.Errors++
				continue
			}
			hit := c.st.hits.Load() != before
			g := r.Reg().gen
			if hit {
				res.Hits++
				if g < seen {
					res.Stale++
					if seen != lastStale {
						res.StaleGens++
						lastStale = seen
					}
					if res.FirstLate == "" {
						res.FirstLate = fmt.Sprintf("first stale hit: registration of generation %d handed out after generation %d was read from the memory", g, seen)
					}
				}
				cachedGen.Store(g)
			}
			if err := c.Release(r); err != nil {
				fail(err)
			}
		}
	}()
	go func() { // B: unmap each generation once A has been handed it from the cache
		defer wg.Done()
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		for !stop.Load() {
			g := gen.Load()
			if cachedGen.Load() != g || unmapping.Load() {
				runtime.Gosched()
				continue
			}
			unmapped.Store(false)
			unmapping.Store(true)
			// addr is the test's own mapping: unmapping is false, so C is not
			// mapping, and C made it (or it is the first one) and tagged it g.
			if err := rawMunmapRange(addr.Load()); err != nil {
				fail(fmt.Errorf("munmap: %w", err))
				return
			}
			owned.Store(false)
			unmapped.Store(true)
			for !stop.Load() && gen.Load() == g {
				runtime.Gosched()
			}
		}
	}()
	go func() { // C: map new memory at the address as soon as it is free, and tag it
		defer wg.Done()
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		for !stop.Load() {
			if !unmapping.Load() {
				runtime.Gosched()
				continue
			}
			a := addr.Load()
			var taken time.Time // when the address was first seen taken after the munmap returned
			for !stop.Load() {
				p, err := rawMmapAt(a, unix.MAP_FIXED_NOREPLACE)
				if err == nil && p == a {
					owned.Store(true)
					break
				}
				if err == nil {
					// A kernel that took the flag for a hint: p is ours, a is not.
					_ = rawMunmapRange(p)
					fail(fmt.Errorf("mmap at %#x with MAP_FIXED_NOREPLACE gave %#x", a, p))
					return
				}
				if !errors.Is(err, unix.EEXIST) {
					fail(fmt.Errorf("mmap at %#x: %v", a, err))
					return
				}
				if !unmapped.Load() {
					continue
				}
				if taken.IsZero() {
					taken = time.Now()
				}
				if time.Since(taken) > 20*time.Millisecond {
					// Someone else mapped the freed address: move on, and never
					// touch the old one again.
					p, err := rawMmapAt(0, 0)
					if err != nil {
						fail(err)
						return
					}
					a = p
					owned.Store(true)
					addr.Store(p)
					res.Moved++
					break
				}
			}
			if stop.Load() {
				return
			}
			g := gen.Load() + 1
			storeTag(a, key, g)
			gen.Store(g)
			res.Remaps++
			unmapping.Store(false)
		}
	}()
	time.Sleep(d)
	stop.Store(true)
	wg.Wait()
	res.Seconds = time.Since(start).Seconds()
	c.Flush()
	// Unmap the range only if the test's mapping is there: when the run stopped
	// between B's munmap and C's mmap the address is free, or already someone else's
	// (the runtime's, the race detector's), and unmapping it would pull memory from
	// under them.
	if owned.Load() {
		_ = rawMunmapRange(addr.Load())
	}
	return res, firstErr
}

// BenchmarkCacheHitByBackend measures one hit (Acquire + Release) in a warm cache of
// 1,024 one-page entries with the eBPF and the userfaultfd backends in the same run
// (the seccomp filter cannot be removed from the process, so it is not benchmarked
// here).
func BenchmarkCacheHitByBackend(b *testing.B) {
	for _, k := range []driverhooks.Kind{driverhooks.KindEBPF, driverhooks.KindUffd} {
		b.Run("notifier="+string(k), func(b *testing.B) {
			be, err := driverhooks.OpenBackend(k)
			if errors.Is(err, driverhooks.ErrNotSupported) {
				b.Skip(err)
			}
			if err != nil {
				b.Fatal(err)
			}
			defer be.Close()
			c, err := New[fakeReg](newFakeRegistrar(), Options{Source: driverhooks.NewNotifier(be), MaxEntries: 2048})
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			const n = 1024
			p := int(pageSize)
			mem, err := unix.Mmap(-1, 0, 2*n*p, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
			if err != nil {
				b.Fatal(err)
			}
			defer unix.Munmap(mem)
			bufs := make([][]byte, n)
			for i := range bufs {
				bufs[i] = mem[2*i*p : 2*i*p+256]
				r, err := c.Acquire(bufs[i])
				if err != nil {
					b.Fatal(err)
				}
				if !r.Cached() {
					b.Fatal("warm-up region not cached")
				}
				mustRelease(b, c, r)
			}
			before := c.Stats()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				r, err := c.Acquire(bufs[i&(n-1)])
				if err != nil {
					b.Fatal(err)
				}
				if err := c.Release(r); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			if st := c.Stats(); st.Misses != before.Misses {
				b.Fatalf("benchmark missed: %+v", st)
			}
		})
	}
}
