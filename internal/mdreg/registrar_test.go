package mdreg

import (
	"errors"
	"sync"
	"testing"
	"unsafe"

	"github.com/goportals/goportals/driverhooks"
	"github.com/goportals/goportals/internal/verbs"
	"github.com/goportals/goportals/regcache"
)

// fakePD implements verbs.PD's registration half; the rest reports ErrNotSupported.
type fakePD struct {
	mu   sync.Mutex
	live map[uint32]bool
	next uint32
}

type fakeMR struct {
	pd     *fakePD
	key    uint32
	addr   uint64
	n      int
	access verbs.Access
}

func (pd *fakePD) RegMR(mem []byte, access verbs.Access) (verbs.MR, error) {
	if err := access.Validate(); err != nil {
		return nil, err
	}
	pd.mu.Lock()
	defer pd.mu.Unlock()
	pd.next++
	pd.live[pd.next] = true
	return &fakeMR{pd: pd, key: pd.next, addr: uint64(uintptr(unsafe.Pointer(&mem[0]))), n: len(mem), access: access}, nil
}

func (pd *fakePD) CreateQP(verbs.QPAttr) (verbs.QP, error) { return nil, verbs.ErrNotSupported }
func (pd *fakePD) Close() error                            { return nil }

func (m *fakeMR) LKey() uint32         { return m.key }
func (m *fakeMR) RKey() uint32         { return m.key }
func (m *fakeMR) Addr() uint64         { return m.addr }
func (m *fakeMR) Len() int             { return m.n }
func (m *fakeMR) Access() verbs.Access { return m.access }
func (m *fakeMR) Dereg() error {
	m.pd.mu.Lock()
	defer m.pd.mu.Unlock()
	if !m.pd.live[m.key] {
		return verbs.ErrClosed
	}
	delete(m.pd.live, m.key)
	return nil
}

func TestVerbsRegistrar(t *testing.T) {
	pd := &fakePD{live: map[uint32]bool{}}
	c, err := regcache.New[verbs.MR](VerbsRegistrar(pd, verbs.AccessLocalWrite|verbs.AccessRemoteRead), regcache.Options{Source: explicitOnly{sub: driverhooks.Default().Subscribe()}})
	if err != nil {
		t.Fatal(err)
	}
	mem := make([]byte, 2*4096)
	r, err := c.Acquire(mem[10:5000])
	if err != nil {
		t.Fatal(err)
	}
	mr := r.Reg()
	if mr.Addr() != uint64(r.Addr()) || mr.Len() != r.Len() || mr.Access() != verbs.AccessLocalWrite|verbs.AccessRemoteRead {
		t.Fatalf("MR [%#x+%#x) %v, region [%#x+%#x)", mr.Addr(), mr.Len(), mr.Access(), r.Addr(), r.Len())
	}
	c.Release(r)
	c.Close()
	if len(pd.live) != 0 {
		t.Fatalf("%d MRs left registered after Close", len(pd.live))
	}
	bad, err := regcache.New[verbs.MR](VerbsRegistrar(pd, verbs.AccessRemoteWrite), regcache.Options{Source: explicitOnly{sub: driverhooks.Default().Subscribe()}})
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	if _, err := bad.Acquire(mem); !errors.Is(err, verbs.ErrInvalidArgument) {
		t.Fatalf("invalid access: %v, want verbs.ErrInvalidArgument", err)
	}
}

// explicitOnly is a notifier Source that claims to watch every range but only carries
// explicit invalidations (driverhooks.Invalidate): a cache over it learns of Free only
// because Free notifies.
type explicitOnly struct{ sub driverhooks.Subscription }

func (explicitOnly) Watch(addr, length uintptr) error      { return nil }
func (explicitOnly) Unwatch(addr, length uintptr) error    { return nil }
func (e explicitOnly) Subscribe() driverhooks.Subscription { return e.sub }
