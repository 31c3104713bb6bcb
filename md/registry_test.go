package md

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/goportals/goportals/internal/verbs"
	"github.com/goportals/goportals/internal/verbs/loopback"
	"github.com/goportals/goportals/internal/verbs/soft"
	"github.com/goportals/goportals/internal/verbs/verbstest"
	"github.com/goportals/goportals/regcache"
)

const accessAll = verbs.AccessLocalWrite | verbs.AccessRemoteWrite | verbs.AccessRemoteRead | verbs.AccessRemoteAtomic

var loopbackEnv = verbstest.Env{
	Name: "loopback",
	Open: func(tb testing.TB) (verbs.Context, verbs.Context) {
		a, err := loopback.Device{}.Open()
		if err != nil {
			tb.Fatal(err)
		}
		b, err := loopback.Device{}.Open()
		if err != nil {
			tb.Fatal(err)
		}
		return a, b
	},
}

// softEnv opens two soft contexts in this process: the real shared-memory and
// cross-memory paths, to this process itself.
var softEnv = verbstest.Env{
	Name: "soft",
	Open: func(tb testing.TB) (verbs.Context, verbs.Context) {
		devs, err := soft.Provider{}.Devices()
		if err != nil || len(devs) == 0 {
			tb.Skipf("soft provider has no device on this platform (%v)", err)
		}
		a, err := soft.Open()
		if err != nil {
			tb.Fatal(err)
		}
		b, err := soft.Open()
		if err != nil {
			a.Close()
			tb.Fatal(err)
		}
		return a, b
	},
}

var envs = []verbstest.Env{loopbackEnv, softEnv}

func newPair(t testing.TB, env verbstest.Env) *verbstest.Pair {
	t.Helper()
	return verbstest.NewPairOpts(t, env, verbstest.PairOptions{CQEntries: 256, MaxSendWR: 64, MaxRecvWR: 16})
}

// countingPD counts the memory regions registered through it and not yet
// deregistered, and can refuse the registration of memory holding a given address.
type countingPD struct {
	verbs.PD
	live   atomic.Int64
	failAt atomic.Uintptr
}

type countingMR struct {
	verbs.MR
	pd   *countingPD
	done atomic.Bool
}

func (c *countingPD) RegMR(mem []byte, access verbs.Access) (verbs.MR, error) {
	addr := uintptr(unsafe.Pointer(unsafe.SliceData(mem)))
	if f := c.failAt.Load(); f != 0 && f >= addr && f < addr+uintptr(len(mem)) {
		return nil, verbs.Errorf("reg_mr", verbs.ErrNoResources, nil)
	}
	mr, err := c.PD.RegMR(mem, access)
	if err != nil {
		return nil, err
	}
	c.live.Add(1)
	return &countingMR{MR: mr, pd: c}, nil
}

func (m *countingMR) Dereg() error {
	err := m.MR.Dereg()
	if err == nil && m.done.CompareAndSwap(false, true) {
		m.pd.live.Add(-1)
	}
	return err
}

// newRegistry opens a registry on pd that the test closes, and checks at the end that
// nothing stayed pinned: the registry closes (no Pinned outstanding) and every memory
// region it registered has been deregistered (every Acquire was released).
func newRegistry(t testing.TB, pd verbs.PD, opts regcache.Options) *Registry {
	r, _ := newCountingRegistry(t, pd, opts)
	return r
}

func newCountingRegistry(t testing.TB, pd verbs.PD, opts regcache.Options) (*Registry, *countingPD) {
	t.Helper()
	cpd := &countingPD{PD: pd}
	r, err := NewRegistry(cpd, accessAll, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := r.Close(); err != nil && !errors.Is(err, ErrClosed) {
			t.Errorf("registry close: %v", err)
		}
		if st := r.Stats(); st.PinnedBytes != 0 || st.Entries != 0 {
			t.Errorf("registrations left after close: %+v", st)
		}
		if n := cpd.live.Load(); n != 0 {
			t.Errorf("%d memory regions still registered after the registry closed", n)
		}
	})
	return r, cpd
}

func mustRelease(t testing.TB, p *Pinned) {
	t.Helper()
	if err := p.Release(); err != nil {
		t.Fatal(err)
	}
}

// skipMemlock skips when a registration is refused for lack of lockable memory.
func skipMemlock(t testing.TB, err error) {
	t.Helper()
	if errors.Is(err, verbs.ErrMemlock) {
		t.Skipf("registration refused by RLIMIT_MEMLOCK (raise it with ulimit -l): %v", err)
	}
}

// rdma moves the bytes of local (SGEs) to or from remote (segments) with RDMA WRITE or
// READ work requests on s, one per overlap of a local SGE and a remote segment, and
// waits for them.
func rdma(t *testing.T, s *verbstest.Side, op verbs.Opcode, local []verbs.SGE, remote []RemoteSegment) {
	t.Helper()
	if verbs.TotalLength(local) != totalRemote(remote) {
		t.Fatalf("local %d bytes, remote %d", verbs.TotalLength(local), totalRemote(remote))
	}
	var wrs []verbs.SendWR
	var loff, roff uint64 // consumed bytes of local[0] and remote[0]
	for len(local) > 0 {
		n := min(uint64(local[0].Length)-loff, uint64(remote[0].Len)-roff)
		wrs = append(wrs, verbs.SendWR{
			ID: uint64(len(wrs)), Opcode: op, Flags: verbs.SendSignaled,
			SG:         []verbs.SGE{{Addr: local[0].Addr + loff, Length: uint32(n), LKey: local[0].LKey}},
			RemoteAddr: remote[0].Addr + roff, RKey: remote[0].RKey,
		})
		loff, roff = loff+n, roff+n
		if loff == uint64(local[0].Length) {
			local, loff = local[1:], 0
		}
		if roff == uint64(remote[0].Len) {
			remote, roff = remote[1:], 0
		}
	}
	s.PostSend(t, wrs...)
	for _, wc := range s.Wait(t, len(wrs)) {
		if wc.Status != verbs.StatusSuccess {
			t.Fatalf("%v work request %d: %v", op, wc.ID, wc.Status)
		}
	}
}

func totalRemote(r []RemoteSegment) uint64 {
	var n uint64
	for _, s := range r {
		n += uint64(s.Len)
	}
	return n
}

func fill(b []byte, seed byte) {
	for i := range b {
		b[i] = byte(i*13) ^ seed
	}
}

// checkPieces verifies that the SGEs and remote segments of p describe exactly the
// contiguous pieces of [off, off+n) of m, in order, with the keys of their regions.
func checkPieces(t *testing.T, m Memory, off, n uint64, p *Pinned) ([]verbs.SGE, []RemoteSegment) {
	t.Helper()
	pieces, err := m.Slices(off, n, nil)
	if err != nil {
		t.Fatal(err)
	}
	sges := p.SGEs(nil)
	rem := p.Remote(nil)
	if len(sges) != len(pieces) || len(rem) != len(pieces) || p.NumSegments() != len(pieces) || p.Len() != n {
		t.Fatalf("%d SGEs, %d remote segments, NumSegments %d, Len %d for %d pieces of %d bytes",
			len(sges), len(rem), p.NumSegments(), p.Len(), len(pieces), n)
	}
	for i, pc := range pieces {
		addr := uint64(uintptr(unsafe.Pointer(&pc[0])))
		if sges[i].Addr != addr || sges[i].Length != uint32(len(pc)) {
			t.Fatalf("SGE %d = %+v, piece at %#x len %d", i, sges[i], addr, len(pc))
		}
		if rem[i].Addr != addr || rem[i].Len != uint32(len(pc)) {
			t.Fatalf("remote segment %d = %+v, piece at %#x len %d", i, rem[i], addr, len(pc))
		}
	}
	return sges, rem
}

// TestRegistryRDMARoundTrip pins an iovec of large Go objects (which start on a page)
// on one side and library memory on the other, and moves bytes between them with RDMA
// WRITE and READ through the SGEs and remote segments.
func TestRegistryRDMARoundTrip(t *testing.T) {
	for _, env := range envs {
		t.Run(env.Name, func(t *testing.T) {
			roundTrip(t, env, [][]byte{make([]byte, 40000), make([]byte, 33000), nil, make([]byte, 70000)})
		})
	}
}

// TestRegistryRDMASmallGoObjects is the round trip with small Go objects, which share
// their pages with other objects (the registration covers the whole pages).
func TestRegistryRDMASmallGoObjects(t *testing.T) {
	for _, env := range envs {
		t.Run(env.Name, func(t *testing.T) {
			if raceEnabled && env.Name == "soft" {
				t.Skip("known soft provider bug: (*mr).bytes in internal/verbs/soft/mr.go does pointer " +
					"arithmetic from the registration's page start, which checkptr (-race) rejects when the " +
					"page start lies in another Go object; it needs //go:nocheckptr like regcache.pageSlice")
			}
			roundTrip(t, env, [][]byte{make([]byte, 5000), make([]byte, 1), nil, make([]byte, 70000)})
		})
	}
}

func roundTrip(t *testing.T, env verbstest.Env, iov [][]byte) {
	t.Helper()
	pair := newPair(t, env)
	ra := newRegistry(t, pair.A.PD, regcache.Options{})
	rb := newRegistry(t, pair.B.PD, regcache.Options{})

	// Initiator: an iovec of Go heap pieces. Target: library memory in three pieces.
	for i, b := range iov {
		fill(b, byte(i+1))
	}
	src, err := Iovecs(iov)
	if err != nil {
		t.Fatal(err)
	}
	soff, doff := uint64(len(iov[0])-2000), uint64(50)
	n := src.Len() - soff - 10000
	alloc, err := Alloc(int(n) + 20000)
	if err != nil {
		t.Fatal(err)
	}
	defer alloc.Free()
	ab := alloc.Bytes()
	dst, err := Iovecs([][]byte{ab[:100], ab[100:40000], ab[50000:]})
	if err != nil {
		t.Fatal(err)
	}

	ps, err := ra.Pin(src, soff, n)
	skipMemlock(t, err)
	if err != nil {
		t.Fatal(err)
	}
	pd, err := rb.Pin(dst, doff, n)
	skipMemlock(t, err)
	if err != nil {
		t.Fatal(err)
	}
	if ra.Outstanding() != 1 || rb.Outstanding() != 1 {
		t.Fatalf("outstanding %d %d", ra.Outstanding(), rb.Outstanding())
	}
	local, _ := checkPieces(t, src, soff, n, ps)
	_, remote := checkPieces(t, dst, doff, n, pd)
	if len(local) != 3 || len(remote) != 3 {
		t.Fatalf("%d local and %d remote pieces, want 3 and 3", len(local), len(remote))
	}

	// A writes its pinned range into B's through B's remote segments.
	rdma(t, pair.A, verbs.OpRDMAWrite, local, remote)
	want := make([]byte, n)
	src.ReadAt(want, soff)
	got := make([]byte, n)
	dst.ReadAt(got, doff)
	if !bytes.Equal(got, want) {
		t.Fatal("RDMA WRITE through the pinned segments moved the wrong bytes")
	}
	for i := 40000; i < 50000; i++ {
		if ab[i] != 0 {
			t.Fatalf("byte %d outside the target pieces changed", i)
		}
	}

	// A reads them back into a fresh range of its own memory.
	fill(ab, 0x77)
	pr, err := rb.Pin(dst, doff, n)
	if err != nil {
		t.Fatal(err)
	}
	back := make([]byte, n)
	pb, err := ra.Pin(Bytes(back), 0, n)
	skipMemlock(t, err)
	if err != nil {
		t.Fatal(err)
	}
	rdma(t, pair.A, verbs.OpRDMARead, pb.SGEs(nil), pr.Remote(nil))
	dst.ReadAt(want, doff)
	if !bytes.Equal(back, want) {
		t.Fatal("RDMA READ through the pinned segments moved the wrong bytes")
	}
	stb := rb.Stats()
	if stb.Hits < 3 {
		t.Fatalf("the second pin of the same target range did not hit the cache: %+v", stb)
	}
	for _, p := range []*Pinned{ps, pd, pr, pb} {
		mustRelease(t, p)
	}
	if ra.Outstanding() != 0 || rb.Outstanding() != 0 {
		t.Fatalf("outstanding after release: %d %d", ra.Outstanding(), rb.Outstanding())
	}
	if err := ps.Release(); !errors.Is(err, ErrNotPinned) {
		t.Fatalf("double release: %v", err)
	}
	if ps.SGEs(nil) != nil || ps.Remote(nil) != nil || ps.Len() != 0 {
		t.Fatal("a released Pinned still hands out keys")
	}
}

func TestRegistryPinRules(t *testing.T) {
	pair := newPair(t, loopbackEnv)
	r := newRegistry(t, pair.A.PD, regcache.Options{})
	buf := make([]byte, 3*4096)
	m := Bytes(buf)

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
	var re *RangeError
	if _, err := r.Pin(m, 1, uint64(len(buf))); !errors.As(err, &re) || re.Op != "pin" {
		t.Fatalf("pin past the end: %v", err)
	}
	if _, err := r.Pin(Memory{}, 0, 1); !errors.Is(err, ErrOutOfRange) {
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
			m, err := Iovecs(iov)
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

// TestPinKeepsGoMemoryAlive drops every reference to a pinned Go buffer except the
// Pinned and checks that the garbage collector does not free it.
func TestPinKeepsGoMemoryAlive(t *testing.T) {
	pair := newPair(t, loopbackEnv)
	r := newRegistry(t, pair.A.PD, regcache.Options{})
	freed := make(chan struct{})
	p := func() *Pinned {
		buf := new([1 << 16]byte)
		runtime.SetFinalizer(buf, func(*[1 << 16]byte) { close(freed) })
		p, err := r.Pin(Bytes(buf[:]), 100, 1000)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}()
	for i := 0; i < 5; i++ {
		runtime.GC()
	}
	select {
	case <-freed:
		t.Fatal("the garbage collector freed pinned memory")
	case <-time.After(50 * time.Millisecond):
	}
	mustRelease(t, p)
	// Once released and dropped from the cache, the memory may go.
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		runtime.GC()
		select {
		case <-freed:
			return
		case <-ctx.Done():
			t.Log("memory still referenced after the registry closed (the provider may keep it; not an error of md)")
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func TestRegistryConcurrentPins(t *testing.T) {
	pair := newPair(t, loopbackEnv)
	r := newRegistry(t, pair.A.PD, regcache.Options{})
	bufs := make([][]byte, 4)
	for i := range bufs {
		bufs[i] = make([]byte, 20000+i*4096)
	}
	m, err := Iovecs(bufs)
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
			m := Bytes(buf)
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
	a, err := Alloc(size)
	if err != nil {
		t.Skipf("cannot map 5 GiB of address space here: %v", err)
	}
	defer a.Free()
	pair := newPair(t, loopbackEnv)
	r := newRegistry(t, pair.A.PD, regcache.Options{})
	small := make([]byte, 100)
	m, err := Iovecs([][]byte{small, a.Bytes()})
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
			a, err := Alloc(3 * 4096)
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
			q, err := r.Pin(Bytes(other), 0, 10)
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

// TestPinHitKeepsOtherObjectAlive pins object A (the cache entry then covers A's page
// and references A), then pins object B of the same page, a cache hit on A's entry, and
// drops every reference to B but the Pinned: B must stay alive while pinned.
func TestPinHitKeepsOtherObjectAlive(t *testing.T) {
	pair := newPair(t, loopbackEnv)
	r := newRegistry(t, pair.A.PD, regcache.Options{})
	const size = 512
	page := uintptr(4096)
	objs := make([]*[size]byte, 64)
	for i := range objs {
		objs[i] = new([size]byte)
	}
	ai, bi := -1, -1
	for i := 0; i < len(objs) && bi < 0; i++ {
		for j := range objs {
			pa, pb := uintptr(unsafe.Pointer(objs[i])), uintptr(unsafe.Pointer(objs[j]))
			if i != j && pa/page == pb/page && (pb+size-1)/page == pb/page && (pa+size-1)/page == pa/page {
				ai, bi = i, j
				break
			}
		}
	}
	if bi < 0 {
		t.Skip("no two 512-byte objects on one page (unexpected allocator layout)")
	}
	a := objs[ai]
	pa, err := r.Pin(Bytes(a[:]), 0, size)
	if err != nil {
		t.Fatal(err)
	}
	mustRelease(t, pa)
	if r.Stats().Fallbacks != 0 {
		t.Skip("the notifier cannot watch Go memory here: no cache entry to hit")
	}
	freed := make(chan struct{})
	runtime.SetFinalizer(objs[bi], func(*[size]byte) { close(freed) })
	pb, err := r.Pin(Bytes(objs[bi][:]), 0, size)
	if err != nil {
		t.Fatal(err)
	}
	if st := r.Stats(); st.Hits != 1 {
		t.Fatalf("the pin of the second object did not hit the first one's entry: %+v", st)
	}
	clear(objs)
	for i := 0; i < 5; i++ {
		runtime.GC()
	}
	select {
	case <-freed:
		t.Fatal("the garbage collector freed a pinned object that hit another object's cache entry")
	case <-time.After(50 * time.Millisecond):
	}
	mustRelease(t, pb)
	runtime.KeepAlive(a)
}
