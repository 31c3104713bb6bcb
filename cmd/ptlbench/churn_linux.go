//go:build linux

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/goportals/goportals/driverhooks"
	"github.com/goportals/goportals/internal/envknob"
	"github.com/goportals/goportals/internal/mdreg"
	"github.com/goportals/goportals/internal/verbs"
	"github.com/goportals/goportals/internal/verbs/soft"
	"github.com/goportals/goportals/regcache"
	"golang.org/x/sys/unix"
)

var churnOpts struct {
	pin        string
	slots      int
	slotPages  int
	maxEntries int
}

func init() {
	register(&test{
		name:    "churn",
		summary: "pin-cache coherence under mmap/munmap/mremap/MAP_FIXED/madvise/GC churn (PTL_CHECK_PFN=1)",
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&churnOpts.pin, "pin", "soft", "churn: registrar, soft (the soft verbs provider's registration: io_uring long-term pins like a NIC's, so madvise(DONTNEED/FREE) succeeds on cached ranges and any failure fails the run; mlock where io_uring is unavailable), mlock (madvise(DONTNEED/FREE) then fails on cached ranges) or populate (faults the pages in for writing, without pinning)")
			fs.IntVar(&churnOpts.slots, "slots", 32, "churn: number of mapped ranges that mutators change")
			fs.IntVar(&churnOpts.slotPages, "slot-pages", 16, "churn: pages per range")
			fs.IntVar(&churnOpts.maxEntries, "max-entries", 256, "churn: cache entry limit (small, so eviction runs too)")
		},
		run: runChurn,
	})
}

// populatePin is the registrar of -pin populate: like a NIC registration it faults
// every page in for writing (MADV_POPULATE_WRITE, so page frames exist when the
// oracle records them) but it does not lock them, so madvise(DONTNEED/FREE) still
// succeeds on registered ranges as it does under a long-term pin.
type populatePin struct{}

// Register populates mem for writing.
func (populatePin) Register(mem []byte) (regcache.Pin, error) {
	if err := unix.Madvise(mem, unix.MADV_POPULATE_WRITE); err != nil {
		return regcache.Pin{}, err
	}
	return regcache.Pin{Addr: uintptr(unsafe.Pointer(unsafe.SliceData(mem))), Len: uintptr(len(mem))}, nil
}

// Deregister has nothing to undo.
func (populatePin) Deregister(regcache.Pin) error { return nil }

// Mutation kinds.
const (
	opMunmap = iota
	opPartialMunmap
	opMremap
	opMapFixed
	opDontneed
	opFree
	numOps
)

var opNames = [numOps]string{"munmap+remap", "partial-munmap", "mremap", "mmap-fixed", "madv-dontneed", "madv-free"}

// churnSlot is one mapped range. Mutators hold mu exclusively; workers hold it
// shared while they touch the memory (so nobody faults on an unmapped page), but may
// keep a registration after unlocking, which is how entries get invalidated in use.
type churnSlot struct {
	mu  sync.RWMutex
	mem []byte // nil when lost
	gen uint64
}

type churnStats struct {
	ops         [numOps]atomic.Uint64
	refused     [numOps]atomic.Uint64 // EINVAL on mlocked ranges, EEXIST on a taken address
	madvFailed  [numOps]atomic.Uint64 // madvise(DONTNEED/FREE) refused (by errno: see madvErrno)
	madvErrno   atomic.Int64          // the last errno of a refused madvise
	acquires    atomic.Uint64
	heldAcross  atomic.Uint64
	dataErrors  atomic.Uint64
	acqErrors   atomic.Uint64
	relErrors   atomic.Uint64
	goAllocs    atomic.Uint64
	freeOSMem   atomic.Uint64
	winAttempts atomic.Uint64
	winRaced    atomic.Uint64 // new mapping at the old address before munmap returned
	winOldHit   atomic.Uint64 // the lookup returned the entry of the old mapping
	winLost     atomic.Uint64 // attempts where the address was taken by someone else
	firstErr    atomic.Pointer[error]
	slowestMut  atomic.Int64 // longest mutation, lock wait included (ns)
}

func (s *churnStats) fail(err error) {
	s.firstErr.CompareAndSwap(nil, &err)
}

const pg = 4096

func mmapAt(at unsafe.Pointer, n int, flags int) ([]byte, error) {
	p, err := unix.MmapPtr(-1, 0, at, uintptr(n), unix.PROT_READ|unix.PROT_WRITE,
		unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|flags)
	if err != nil {
		return nil, err
	}
	if at != nil && p != at {
		unix.MunmapPtr(p, uintptr(n))
		return nil, unix.EEXIST
	}
	return unsafe.Slice((*byte)(p), n), nil
}

func ptrOf(b []byte) unsafe.Pointer { return unsafe.Pointer(unsafe.SliceData(b)) }

// tag writes gen into the first word of every page of b.
func tag(b []byte, gen uint64) {
	for off := 0; off+8 <= len(b); off += pg {
		*(*uint64)(unsafe.Pointer(&b[off])) = gen
	}
}

func runChurn(ctx context.Context, cfg config) error {
	if envknob.Get(envknob.CheckPFN) == "" {
		if err := envknob.Set(envknob.CheckPFN, "1"); err != nil {
			return err
		}
		fmt.Fprintf(cfg.out, "%s=1 (set by ptlbench: every hit is checked against /proc/self/pagemap)\n", driverhooks.CheckPFNEnv)
	} else if !driverhooks.CheckPFNEnabled() {
		return fmt.Errorf("churn needs %s=1 (it is set to %q)", driverhooks.CheckPFNEnv, envknob.Get(envknob.CheckPFN))
	}
	notifier := driverhooks.Default()
	if err := driverhooks.DefaultErr(); err != nil {
		return fmt.Errorf("churn needs a notifier backend (%s): %w", driverhooks.EnvNotifier, err)
	}
	if churnOpts.slots <= 0 || churnOpts.slotPages < 4 || churnOpts.maxEntries <= 0 {
		return errors.New("churn: -slots and -max-entries must be positive, -slot-pages at least 4")
	}
	switch churnOpts.pin {
	case "soft":
		dev, err := soft.Open()
		if err != nil {
			return fmt.Errorf("churn: soft provider: %w", err)
		}
		defer dev.Close()
		pd, err := dev.AllocPD()
		if err != nil {
			return fmt.Errorf("churn: soft provider: %w", err)
		}
		defer pd.Close()
		reg := mdreg.VerbsRegistrar(pd, verbs.AccessLocalWrite|verbs.AccessRemoteRead|verbs.AccessRemoteWrite)
		how := "soft, " + dev.PinMethod()
		// Under a long-term pin madvise must never fail on a cached range.
		return churnWith(ctx, cfg, notifier, reg, how, dev.PinMethod() == soft.PinIOUring)
	case "mlock":
		return churnWith[regcache.Pin](ctx, cfg, notifier, regcache.MlockRegistrar{}, "mlock", false)
	case "populate":
		return churnWith[regcache.Pin](ctx, cfg, notifier, populatePin{}, "populate", true)
	}
	return fmt.Errorf("churn: -pin %q: want soft, mlock or populate", churnOpts.pin)
}

// churnWith runs the churn with caches over reg (described by how). madvOK says
// that madvise(DONTNEED/FREE) must succeed on cached ranges: a failure then fails
// the run.
func churnWith[R any](ctx context.Context, cfg config, notifier *driverhooks.Notifier, reg regcache.Registrar[R], how string, madvOK bool) error {
	var mainCache, winCache *regcache.Cache[R]
	var err error
	var staleMu sync.Mutex
	var staleSeen []string
	onStale := func(addr, length uintptr, pages int) {
		staleMu.Lock()
		defer staleMu.Unlock()
		if len(staleSeen) < 16 {
			kind := "mmap range"
			if goHeapAddr(addr) {
				kind = "Go heap"
			}
			staleSeen = append(staleSeen, fmt.Sprintf("[%#x+%#x) %s, %d pages changed", addr, length, kind, pages))
		}
	}
	mainOpts := regcache.Options{MaxEntries: churnOpts.maxEntries, OnStale: onStale, Source: notifier}
	mainCache, err = regcache.New(reg, mainOpts)
	if err == nil {
		winCache, err = regcache.New(reg, regcache.Options{Source: notifier})
		if err != nil {
			mainCache.Close()
		}
	}
	if err != nil {
		return err
	}
	defer mainCache.Close()
	defer winCache.Close()

	slotLen := churnOpts.slotPages * pg
	slots := make([]*churnSlot, churnOpts.slots)
	for i := range slots {
		b, err := mmapAt(nil, slotLen, 0)
		if err != nil {
			return fmt.Errorf("churn: mmap: %w", err)
		}
		slots[i] = &churnSlot{mem: b, gen: 1}
		tag(b, 1)
	}
	defer func() {
		for _, s := range slots {
			if s.mem != nil {
				unix.MunmapPtr(ptrOf(s.mem), uintptr(len(s.mem)))
			}
		}
	}()

	var st churnStats
	runCtx, cancel := context.WithTimeout(ctx, cfg.duration)
	defer cancel()
	var wg sync.WaitGroup
	start := time.Now()
	for i := 0; i < cfg.threads; i++ {
		wg.Add(2)
		go func(seed int64) { defer wg.Done(); churnMutator(runCtx, slots, slotLen, seed, &st) }(cfg.seed + int64(i))
		go func(seed int64) { defer wg.Done(); churnWorker(runCtx, mainCache, slots, seed, &st) }(cfg.seed + 100 + int64(i))
	}
	wg.Add(2)
	go func() { defer wg.Done(); churnGoHeap(runCtx, mainCache, cfg.seed+200, &st) }()
	go func() { defer wg.Done(); churnWindow(runCtx, winCache, &st) }()
	wg.Wait()
	elapsed := time.Since(start)

	ms := mainCache.Stats()
	ws := winCache.Stats()
	w := cfg.out
	fmt.Fprintf(w, "churn: %v, %d mutators + %d workers + 1 Go-heap thread + 1 reuse-window pair, pin=%s, %d ranges of %d pages\n",
		elapsed.Round(time.Millisecond), cfg.threads, cfg.threads, how, churnOpts.slots, churnOpts.slotPages)
	fmt.Fprintf(w, "  notifier: %s (%s=%q): %s\n", ms.Notifier, driverhooks.EnvNotifier, envknob.Get(envknob.Notifier), ms.Guarantee)
	for k := 0; k < numOps; k++ {
		fmt.Fprintf(w, "  %-15s %10d  (refused %d)\n", opNames[k], st.ops[k].Load(), st.refused[k].Load())
	}
	madvFailed := st.madvFailed[opDontneed].Load() + st.madvFailed[opFree].Load()
	fmt.Fprintf(w, "  madvise failures on cached ranges: %d (DONTNEED %d, FREE %d", madvFailed,
		st.madvFailed[opDontneed].Load(), st.madvFailed[opFree].Load())
	if madvFailed > 0 {
		fmt.Fprintf(w, ", last %v", unix.Errno(st.madvErrno.Load()))
	}
	fmt.Fprintf(w, ")\n")
	fmt.Fprintf(w, "  slowest mutation (lock wait included): %v\n", time.Duration(st.slowestMut.Load()))
	fmt.Fprintf(w, "  go-alloc        %10d  free-os-memory %d\n", st.goAllocs.Load(), st.freeOSMem.Load())
	fmt.Fprintf(w, "  acquires        %10d  held across a mutation %d, data errors %d, acquire errors %d, release errors %d\n",
		st.acquires.Load(), st.heldAcross.Load(), st.dataErrors.Load(), st.acqErrors.Load(), st.relErrors.Load())
	fmt.Fprintf(w, "  cache: hits %d misses %d evictions %d invalidations %d stale-in-use %d merges %d fallbacks %d memlock-retries %d stale-hits %d entries %d pinned %d B\n",
		ms.Hits, ms.Misses, ms.Evictions, ms.Invalidations, ms.StaleInUse, ms.Merges, ms.Fallbacks, ms.MemlockRetries, ms.StaleHits, ms.Entries, ms.PinnedBytes)
	fmt.Fprintf(w, "  locked: VmLck %d B, VmPin %d B\n", ms.Locked.Locked, ms.Locked.Pinned)
	if m := notifier.Monitor(); m != nil {
		mon := m.Stats()
		fmt.Fprintf(w, "  monitor: events %d published %d pagefaults %d errors %d\n", mon.Events, mon.Published, mon.Pagefaults, mon.Errors)
	}
	fmt.Fprintf(w, "  reuse window (separate cache): attempts %d, remapped before munmap returned %d, address lost %d, old entry returned %d, stale hits caught by the PFN check %d\n",
		st.winAttempts.Load(), st.winRaced.Load(), st.winLost.Load(), st.winOldHit.Load(), ws.StaleHits)
	staleMu.Lock()
	for _, s := range staleSeen {
		fmt.Fprintf(w, "  stale hit: %s\n", s)
	}
	staleMu.Unlock()
	fmt.Fprintf(w, "stale=%d invalidations=%d hits=%d misses=%d notifier=%s madvise-failures=%d window-stale=%d\n",
		ms.StaleHits, ms.Invalidations, ms.Hits, ms.Misses, ms.Notifier, madvFailed, ws.StaleHits)

	if p := st.firstErr.Load(); p != nil {
		return fmt.Errorf("%w: %v", errFailed, *p)
	}
	if ms.StaleHits != 0 || st.dataErrors.Load() != 0 {
		return fmt.Errorf("%w: %d stale hits, %d data errors", errFailed, ms.StaleHits, st.dataErrors.Load())
	}
	if ms.Invalidations == 0 {
		return fmt.Errorf("%w: no invalidation happened: the churn did not exercise the notifier", errFailed)
	}
	if madvOK && madvFailed > 0 {
		return fmt.Errorf("%w: madvise failed %d times on cached ranges pinned by %s (last %v)", errFailed, madvFailed, how,
			unix.Errno(st.madvErrno.Load()))
	}
	return nil
}

// churnMutator changes the pages behind random ranges.
func churnMutator(ctx context.Context, slots []*churnSlot, slotLen int, seed int64, st *churnStats) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	rng := rand.New(rand.NewSource(seed))
	pages := slotLen / pg
	for ctx.Err() == nil {
		s := slots[rng.Intn(len(slots))]
		op := rng.Intn(numOps)
		t0 := time.Now()
		s.mu.Lock()
		if s.mem == nil {
			b, err := mmapAt(nil, slotLen, 0)
			if err != nil {
				st.fail(fmt.Errorf("mmap: %w", err))
				s.mu.Unlock()
				return
			}
			s.mem = b
		}
		k := 1 + rng.Intn(pages-2) // first changed page
		m := 1 + rng.Intn(pages-k) // pages changed
		part := s.mem[k*pg : (k+m)*pg]
		var err error
		switch op {
		case opMunmap:
			a := ptrOf(s.mem)
			if err = unix.MunmapPtr(a, uintptr(slotLen)); err == nil {
				s.mem, err = mmapAt(a, slotLen, unix.MAP_FIXED_NOREPLACE)
				if err != nil { // someone took the address: map elsewhere
					st.refused[op].Add(1)
					s.mem, err = mmapAt(nil, slotLen, 0)
				}
			}
		case opPartialMunmap:
			a := ptrOf(part)
			if err = unix.MunmapPtr(a, uintptr(len(part))); err == nil {
				if _, err = mmapAt(a, len(part), unix.MAP_FIXED_NOREPLACE); err != nil {
					// The hole was taken: give the rest up and map afresh.
					st.refused[op].Add(1)
					unix.MunmapPtr(ptrOf(s.mem), uintptr(k*pg))
					if rest := s.mem[(k+m)*pg:]; len(rest) > 0 {
						unix.MunmapPtr(ptrOf(rest), uintptr(len(rest)))
					}
					s.mem, err = mmapAt(nil, slotLen, 0)
				}
			}
		case opMremap:
			// Move the pages away (page by page: mremap needs one VMA, and MAP_FIXED,
			// mlock and userfaultfd registrations split the range), then map fresh
			// pages at the old address.
			a := ptrOf(s.mem)
			var dst []byte
			if dst, err = mmapAt(nil, slotLen, 0); err == nil {
				for p := 0; p < slotLen && err == nil; p += pg {
					_, err = unix.MremapPtr(unsafe.Add(a, p), pg, ptrOf(dst[p:]), pg, unix.MREMAP_MAYMOVE|unix.MREMAP_FIXED)
				}
				unix.MunmapPtr(ptrOf(dst), uintptr(slotLen))
				if err == nil {
					s.mem, err = mmapAt(a, slotLen, unix.MAP_FIXED_NOREPLACE)
					if err != nil {
						st.refused[op].Add(1)
						s.mem, err = mmapAt(nil, slotLen, 0)
					}
				}
			}
		case opMapFixed:
			_, err = mmapAt(ptrOf(part), len(part), unix.MAP_FIXED)
		case opDontneed, opFree:
			adv := unix.MADV_DONTNEED
			if op == opFree {
				adv = unix.MADV_FREE
			}
			if err = unix.Madvise(part, adv); err != nil {
				// mlocked pages cannot be dropped (EINVAL); under a long-term pin
				// nothing should refuse it.
				var errno unix.Errno
				if errors.As(err, &errno) {
					st.madvErrno.Store(int64(errno))
				}
				st.madvFailed[op].Add(1)
				st.refused[op].Add(1)
				err = nil
			}
		}
		if err != nil {
			st.fail(fmt.Errorf("%s: %w", opNames[op], err))
			s.mem = nil
			s.mu.Unlock()
			return
		}
		st.ops[op].Add(1)
		if d := time.Since(t0); d > time.Duration(st.slowestMut.Load()) {
			st.slowestMut.Store(int64(d))
		}
		s.gen++
		tag(s.mem, s.gen)
		s.mu.Unlock()
		runtime.Gosched()
	}
}

// churnWorker acquires registrations of random sub-ranges and checks the data.
func churnWorker[R any](ctx context.Context, c *regcache.Cache[R], slots []*churnSlot, seed int64, st *churnStats) {
	rng := rand.New(rand.NewSource(seed))
	for ctx.Err() == nil {
		s := slots[rng.Intn(len(slots))]
		s.mu.RLock()
		if s.mem == nil {
			s.mu.RUnlock()
			continue
		}
		off := rng.Intn(len(s.mem) - 1)
		n := 1 + rng.Intn(min(len(s.mem)-off, 6*pg))
		b := s.mem[off : off+n]
		r, err := c.Acquire(b)
		st.acquires.Add(1)
		if err != nil {
			st.acqErrors.Add(1)
			st.fail(fmt.Errorf("acquire: %w", err))
			s.mu.RUnlock()
			continue
		}
		if !r.Contains(uintptr(ptrOf(b)), len(b)) {
			st.fail(errors.New("acquire returned a region that does not contain the request"))
		}
		// Every page must carry the slot's generation, then leave a stamp.
		for p := (off + pg - 1) / pg * pg; p+8 <= off+n; p += pg {
			if *(*uint64)(unsafe.Pointer(&s.mem[p])) != s.gen {
				st.dataErrors.Add(1)
			}
		}
		if last := off + n - 1; last%pg >= 8 { // never over a page's tag word
			s.mem[last] = byte(seed)
		}
		hold := rng.Intn(4) == 0
		if !hold {
			if err := c.Release(r); err != nil {
				st.relErrors.Add(1)
			}
		}
		s.mu.RUnlock()
		if hold {
			// Keep the registration while mutators may change its pages.
			st.heldAcross.Add(1)
			runtime.Gosched()
			if err := c.Release(r); err != nil {
				st.relErrors.Add(1)
			}
		}
	}
}

// churnGoHeap registers Go memory, drops it and returns it to the OS.
func churnGoHeap[R any](ctx context.Context, c *regcache.Cache[R], seed int64, st *churnStats) {
	rng := rand.New(rand.NewSource(seed))
	var keep [16][]byte
	for i := 0; ctx.Err() == nil; i++ {
		b := make([]byte, 1+rng.Intn(256<<10))
		for j := 0; j < len(b); j += pg {
			b[j] = byte(i)
		}
		st.goAllocs.Add(1)
		r, err := c.Acquire(b)
		if err != nil {
			st.fail(fmt.Errorf("acquire Go memory: %w", err))
			return
		}
		if b[0] != byte(i) {
			st.dataErrors.Add(1)
		}
		c.Release(r)
		if k := keep[rng.Intn(len(keep))]; k != nil {
			if r, err := c.Acquire(k); err == nil { // usually a hit
				c.Release(r)
			}
		}
		keep[rng.Intn(len(keep))] = b
		if i%64 == 0 {
			debug.FreeOSMemory()
			st.freeOSMem.Add(1)
		}
	}
}

// churnWindow exercises the residual window of the userfaultfd notifier: thread A caches a
// registration and unmaps it; thread B maps new memory at the same address as soon as
// it is free, possibly before A's munmap has returned, and looks it up at once.
func churnWindow[R any](ctx context.Context, c *regcache.Cache[R], st *churnStats) {
	// oldEntry is the entry thread A cached before unmapping.
	var oldEntry atomic.Pointer[regcache.Region[R]]
	const n = 4 * pg
	var target atomic.Pointer[byte]
	var returned atomic.Bool
	var wg sync.WaitGroup
	armed := make(chan struct{})
	done := make(chan struct{}, 1)
	wg.Add(1)
	go func() { // thread B
		defer wg.Done()
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		for {
			select {
			case <-armed:
			case <-ctx.Done():
				return
			}
			a := unsafe.Pointer(target.Load())
			var nb []byte
			for nb == nil && !returned.Load() {
				nb, _ = mmapAt(a, n, unix.MAP_FIXED_NOREPLACE)
			}
			if nb == nil {
				// munmap returned before we could map: try once more (no longer a race).
				var err error
				if nb, err = mmapAt(a, n, unix.MAP_FIXED_NOREPLACE); err != nil {
					st.winLost.Add(1)
					done <- struct{}{}
					continue
				}
			} else if !returned.Load() {
				st.winRaced.Add(1)
			}
			tag(nb, 0xB)
			r, err := c.Acquire(nb)
			if err == nil {
				if r.Addr() == uintptr(a) && oldEntry.Load() == r {
					st.winOldHit.Add(1)
				}
				c.Release(r)
			}
			unix.MunmapPtr(a, n)
			done <- struct{}{}
		}
	}()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for ctx.Err() == nil {
		b, err := mmapAt(nil, n, 0)
		if err != nil {
			st.fail(err)
			break
		}
		tag(b, 0xA)
		r, err := c.Acquire(b)
		if err != nil {
			st.fail(err)
			unix.MunmapPtr(ptrOf(b), n)
			break
		}
		c.Release(r)
		oldEntry.Store(r)
		target.Store(&b[0])
		returned.Store(false)
		select {
		case armed <- struct{}{}:
		case <-ctx.Done():
			unix.MunmapPtr(ptrOf(b), n)
			wg.Wait()
			return
		}
		st.winAttempts.Add(1)
		unix.MunmapPtr(ptrOf(b), n)
		returned.Store(true)
		<-done // B always finishes an armed attempt
	}
	wg.Wait()
}

// goHeapAddr reports whether addr lies in the Go heap's usual arena range on 64-bit
// Linux (hint addresses 0x00c0<<32 upwards); used only to label diagnostics.
func goHeapAddr(addr uintptr) bool {
	return addr>>32 >= 0xc0 && addr>>32 < 0x1000
}
