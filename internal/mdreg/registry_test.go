package mdreg

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"unsafe"

	"github.com/goportals/goportals/md"

	"github.com/goportals/goportals/internal/verbs"
	"github.com/goportals/goportals/regcache"
)

func TestRegistryPinRules(t *testing.T) {
	pair := newPair(t, loopbackEnv)
	r := newRegistry(t, pair.A.PD, regcache.Options{})
	buf := make([]byte, 3*4096)
	m := md.Bytes(buf)

	// Zero length: an empty Pinned, no registration.
	p, err := r.Pin(m, 100, 0)
	if err != nil {
		t.Fatal(err)
	}
	if p.SGEs(nil) != nil || p.Remote(nil) != nil || p.NumSegments() != 0 || r.Outstanding() != 0 {
		t.Fatal("empty pin holds something")
	}
	if st := r.Stats(); st.Hits+st.Misses+st.Fallbacks != 0 {
		t.Fatalf("empty pin touched the cache: %+v", st)
	}
	mustRelease(t, p)
	if err := p.Release(); !errors.Is(err, ErrNotPinned) {
		t.Fatalf("double release of an empty pin: %v", err)
	}
	if err := new(Pinned).Release(); !errors.Is(err, ErrNotPinned) {
		t.Fatalf("release of a never pinned Pinned: %v", err)
	}

	// Out of range.
	var re *md.RangeError
	if _, err := r.Pin(m, 1, uint64(len(buf))); !errors.As(err, &re) || re.Op != "pin" {
		t.Fatalf("pin past the end: %v", err)
	}
	if _, err := r.Pin(md.Memory{}, 0, 1); !errors.Is(err, md.ErrOutOfRange) {
		t.Fatalf("pin of empty memory: %v", err)
	}

	// Hits: a second pin inside the first one's pages.
	p1, err := r.Pin(m, 10, 5000)
	if err != nil {
		t.Fatal(err)
	}
	p2, err := r.Pin(m, 4096, 100)
	if err != nil {
		t.Fatal(err)
	}
	if st := r.Stats(); st.Misses != 1 || st.Hits != 1 {
		t.Fatalf("stats after two overlapping pins: %+v", st)
	}
	if err := r.PinInto(p1, m, 0, 1); !errors.Is(err, ErrPinnedInUse) {
		t.Fatalf("PinInto a live Pinned: %v", err)
	}
	if err := r.PinInto(nil, m, 0, 1); !errors.Is(err, ErrBadArgument) {
		t.Fatalf("PinInto nil: %v", err)
	}

	// Close refuses while pins are outstanding and loses nothing.
	if err := r.Close(); !errors.Is(err, ErrBusy) {
		t.Fatalf("close with 2 pins: %v", err)
	}
	if sg := p2.SGEs(nil); len(sg) != 1 || sg[0].Length != 100 {
		t.Fatalf("pin after a refused close: %v", sg)
	}
	mustRelease(t, p1)
	mustRelease(t, p2)

	// A released Pinned can be reused by PinInto.
	if err := r.PinInto(p1, m, 8000, 10); err != nil {
		t.Fatal(err)
	}
	if sg := p1.SGEs(nil); len(sg) != 1 || sg[0].Addr != uint64(uintptr(unsafe.Pointer(&buf[8000]))) {
		t.Fatalf("reused Pinned: %v", sg)
	}
	mustRelease(t, p1)

	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); !errors.Is(err, ErrClosed) {
		t.Fatalf("second close: %v", err)
	}
	if _, err := r.Pin(m, 0, 1); !errors.Is(err, ErrClosed) {
		t.Fatalf("pin after close: %v", err)
	}
	if _, err := r.Pin(m, 0, 0); !errors.Is(err, ErrClosed) {
		t.Fatalf("empty pin after close: %v", err)
	}
}

func TestNewRegistryErrors(t *testing.T) {
	if _, err := NewRegistry(nil, accessAll, regcache.Options{}); !errors.Is(err, ErrBadArgument) {
		t.Fatalf("nil pd: %v", err)
	}
	pair := newPair(t, loopbackEnv)
	if _, err := NewRegistry(pair.A.PD, verbs.AccessRemoteWrite, regcache.Options{}); !errors.Is(err, ErrBadArgument) {
		t.Fatalf("remote write without local write: %v", err)
	}
	t.Setenv(regcache.EnvMaxEntries, "many")
	if _, err := NewRegistry(pair.A.PD, accessAll, regcache.Options{}); !errors.Is(err, regcache.ErrBadEnv) {
		t.Fatalf("bad environment: %v", err)
	}
}

// TestPinFailureReleasesEarlierPieces pins an iovec whose third piece cannot be
// registered: the pin fails and the registrations of the first two go back.
func TestPinFailureReleasesEarlierPieces(t *testing.T) {
	for _, env := range envs {
		t.Run(env.Name, func(t *testing.T) {
			pair := newPair(t, env)
			r, cpd := newCountingRegistry(t, pair.A.PD, regcache.Options{})
			iov := [][]byte{make([]byte, 4096), make([]byte, 10000), make([]byte, 4096)}
			m, err := md.Iovecs(iov)
			if err != nil {
				t.Fatal(err)
			}
			cpd.failAt.Store(uintptr(unsafe.Pointer(&iov[2][100])))
			p, err := r.Pin(m, 0, m.Len())
			if !errors.Is(err, verbs.ErrNoResources) || p != nil {
				t.Fatalf("pin with a refused piece: %v, %v", p, err)
			}
			if r.Outstanding() != 0 {
				t.Fatalf("failed pin left %d outstanding", r.Outstanding())
			}
			// The first two pieces were registered and released: they stay cached, unused,
			// and the cleanup proves their regions are deregistered at close.
			st := r.Stats()
			if st.Misses+st.Fallbacks != 2 {
				t.Fatalf("stats after the failed pin: %+v", st)
			}
			cpd.failAt.Store(0)
			p, err = r.Pin(m, 0, m.Len())
			if err != nil {
				t.Fatal(err)
			}
			if got := len(p.SGEs(nil)); got != 3 {
				t.Fatalf("%d SGEs for 3 pieces", got)
			}
			mustRelease(t, p)
		})
	}
}

func TestRegistryConcurrentPins(t *testing.T) {
	pair := newPair(t, loopbackEnv)
	r := newRegistry(t, pair.A.PD, regcache.Options{})
	bufs := make([][]byte, 4)
	for i := range bufs {
		bufs[i] = make([]byte, 20000+i*4096)
	}
	m, err := md.Iovecs(bufs)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			var p Pinned
			var sg []verbs.SGE
			for i := 0; i < 300; i++ {
				off := uint64((g*7919 + i*104729) % int(m.Len()-1))
				n := min(m.Len()-off, uint64(1+i*97%50000))
				if err := r.PinInto(&p, m, off, n); err != nil {
					errs <- err
					return
				}
				sg = p.SGEs(sg[:0])
				if verbs.TotalLength(sg) != n {
					errs <- fmt.Errorf("SGEs cover %d bytes, want %d", verbs.TotalLength(sg), n)
				}
				if err := p.Release(); err != nil {
					errs <- err
					return
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if r.Outstanding() != 0 {
		t.Fatalf("%d pins outstanding", r.Outstanding())
	}
}

func TestPinHitNoAllocs(t *testing.T) {
	for _, env := range envs {
		t.Run(env.Name, func(t *testing.T) {
			if testing.Short() && env.Name == "soft" {
				t.Skip("short")
			}
			pair := newPair(t, env)
			r := newRegistry(t, pair.A.PD, regcache.Options{})
			buf := make([]byte, 64<<10)
			m := md.Bytes(buf)
			var p Pinned
			sg := make([]verbs.SGE, 0, 4)
			rem := make([]RemoteSegment, 0, 4)
			err := r.PinInto(&p, m, 0, m.Len())
			skipMemlock(t, err)
			if err != nil {
				t.Fatal(err)
			}
			mustRelease(t, &p)
			if st := r.Stats(); st.Fallbacks != 0 {
				t.Skip("the notifier cannot watch Go memory here, so every pin registers")
			}
			allocs := testing.AllocsPerRun(100, func() {
				if err := r.PinInto(&p, m, 0, m.Len()); err != nil {
					t.Fatal(err)
				}
				sg = p.SGEs(sg[:0])
				rem = p.Remote(rem[:0])
				if err := p.Release(); err != nil {
					t.Fatal(err)
				}
			})
			if allocs != 0 {
				t.Fatalf("PinInto+SGEs+Remote+Release of a warm range allocates %v times", allocs)
			}
		})
	}
}

// TestPinSplitsLargePieces pins a 5 GiB allocation (untouched: the loopback provider
// pins nothing, so no page is faulted in) and checks that SGEs and remote segments are
// split at MaxSGELength.
func TestPinSplitsLargePieces(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) < 8 {
		t.Skip("needs a 64-bit address space")
	}
	const size = 5 << 30
	a, err := md.Alloc(size)
	if err != nil {
		t.Skipf("cannot map 5 GiB of address space here: %v", err)
	}
	defer a.Free()
	pair := newPair(t, loopbackEnv)
	r := newRegistry(t, pair.A.PD, regcache.Options{})
	small := make([]byte, 100)
	m, err := md.Iovecs([][]byte{small, a.Bytes()})
	if err != nil {
		t.Fatal(err)
	}
	p, err := r.Pin(m, 50, m.Len()-60)
	if err != nil {
		t.Fatal(err)
	}
	defer mustRelease(t, p)
	sg := p.SGEs(nil)
	rem := p.Remote(nil)
	base := uint64(uintptr(unsafe.Pointer(&a.Bytes()[0])))
	wantLens := []uint32{50, MaxSGELength, MaxSGELength, size - 2*MaxSGELength - 10}
	if len(sg) != len(wantLens) || len(rem) != len(wantLens) || p.NumSegments() != len(wantLens) {
		t.Fatalf("SGEs %v remote %v, want lengths %v", sg, rem, wantLens)
	}
	for i, l := range wantLens {
		if sg[i].Length != l || rem[i].Len != l || sg[i].Addr != rem[i].Addr {
			t.Fatalf("segment %d: SGE %+v remote %+v, want length %d", i, sg[i], rem[i], l)
		}
		if i > 0 && sg[i].Addr != base+uint64(i-1)*MaxSGELength {
			t.Fatalf("segment %d at %#x, want %#x", i, sg[i].Addr, base+uint64(i-1)*MaxSGELength)
		}
		if i > 1 && sg[i].LKey != sg[1].LKey {
			t.Fatalf("pieces of one registration carry different keys: %+v", sg)
		}
	}
	if verbs.TotalLength(sg) != p.Len() || p.Len() != m.Len()-60 {
		t.Fatalf("SGEs cover %d bytes, Len %d, want %d", verbs.TotalLength(sg), p.Len(), m.Len()-60)
	}
}

// TestFreeWhilePinned frees an allocation while an operation holds its registration:
// the registration stays valid until released, is then deregistered, and is never
// handed out again.
func TestFreeWhilePinned(t *testing.T) {
	for _, env := range envs {
		t.Run(env.Name, func(t *testing.T) {
			pair := newPair(t, env)
			r, cpd := newCountingRegistry(t, pair.A.PD, regcache.Options{})
			a, err := md.Alloc(3 * 4096)
			if err != nil {
				t.Fatal(err)
			}
			p, err := r.Pin(a.Memory(), 0, a.Memory().Len())
			skipMemlock(t, err)
			if err != nil {
				t.Fatal(err)
			}
			if st := r.Stats(); st.Fallbacks != 0 {
				t.Skip("the notifier cannot watch this memory here: nothing is cached")
			}
			if err := a.Free(); err != nil {
				t.Fatal(err)
			}
			// A lookup drains the invalidation: pin something else to trigger it.
			other := make([]byte, 64<<10)
			q, err := r.Pin(md.Bytes(other), 0, 10)
			if err != nil {
				t.Fatal(err)
			}
			mustRelease(t, q)
			if n := cpd.live.Load(); n != 2 {
				t.Fatalf("%d regions registered, want 2 (the freed one is still held)", n)
			}
			mustRelease(t, p)
			st := r.Stats()
			if cpd.live.Load() != 1 || st.StaleInUse != 1 || st.Entries != 1 {
				t.Fatalf("after releasing the freed allocation's pin: %d regions, %+v", cpd.live.Load(), st)
			}
		})
	}
}
