package mdreg

import (
	"errors"
	"sync/atomic"
	"testing"
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
