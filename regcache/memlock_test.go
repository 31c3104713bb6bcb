package regcache

import (
	"errors"
	"strings"
	"testing"

	"github.com/goportals/goportals/internal/verbs"
)

// newBudgetCache is a test cache whose registrar fails with verbs.ErrMemlock past
// limit pages registered at once (its own cap stays far above).
func newBudgetCache(t *testing.T, b *memBudget) (*Cache[fakeReg], *fakeRegistrar) {
	t.Helper()
	c, reg, _ := newTestCache(t, Options{MaxBytes: 1 << 40})
	reg.budget = b
	return c, reg
}

// A registration refused for the memlock limit evicts unused entries and retries:
// the new range is cached, the old one deregistered.
func TestMemlockEvictsAndRetries(t *testing.T) {
	b := &memBudget{limit: 3 * pageSize}
	c, reg := newBudgetCache(t, b)
	mem := pages(6)
	p := int(pageSize)
	old := mustAcquire(t, c, mem[:2*p])
	mustRelease(t, c, old)
	r := mustAcquire(t, c, mem[4*p:6*p])
	if !r.Cached() {
		t.Fatal("the range was not cached although evicting the unused entry made room")
	}
	mustRelease(t, c, r)
	s := c.Stats()
	if s.Evictions != 1 || s.MemlockRetries != 1 || s.Fallbacks != 0 || reg.liveCount() != 1 || b.refused != 1 {
		t.Fatalf("stats %+v, live %d, refused %d", s, reg.liveCount(), b.refused)
	}
}

// Entries in use cannot be evicted: when the merged registration still does not fit,
// the transfer's own pages are registered uncached.
func TestMemlockFallsBackToUncached(t *testing.T) {
	b := &memBudget{limit: 4 * pageSize}
	c, reg := newBudgetCache(t, b)
	mem := pages(3)
	p := int(pageSize)
	held := mustAcquire(t, c, mem[:2*p])
	// Overlaps held: the cache would register the 3-page union (2+3 > 4 pages).
	r := mustAcquire(t, c, mem[p:3*p])
	if r.Cached() || r.Len() != 2*p {
		t.Fatalf("want an uncached 2-page registration, got cached=%v len=%d", r.Cached(), r.Len())
	}
	mustRelease(t, c, r)
	mustRelease(t, c, held)
	if s := c.Stats(); s.Fallbacks != 1 {
		t.Fatalf("stats %+v", s)
	}
	if n := reg.liveCount(); n != 0 {
		// held was detached by the merge attempt and went on its release.
		t.Fatalf("%d registrations live", n)
	}
}

// What cannot be pinned at all fails with an error that says how much is locked,
// the limit, and the variable of the cache's own cap, and matches verbs.ErrMemlock.
func TestMemlockError(t *testing.T) {
	b := &memBudget{limit: pageSize}
	c, _ := newBudgetCache(t, b)
	mem := pages(2)
	_, err := c.Acquire(mem)
	if !errors.Is(err, verbs.ErrMemlock) {
		t.Fatalf("error %v does not match verbs.ErrMemlock", err)
	}
	var me *MemlockError
	if !errors.As(err, &me) {
		t.Fatalf("error %T %v is not a *MemlockError", err, err)
	}
	if me.Len != 2*pageSize || me.Addr != addrOf(mem) {
		t.Errorf("error names [%#x,+%d), want [%#x,+%d)", me.Addr, me.Len, addrOf(mem), 2*pageSize)
	}
	msg := err.Error()
	for _, want := range []string{"locked", "VmLck", "VmPin", "RLIMIT_MEMLOCK", EnvMaxBytes} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %q: %s", want, msg)
		}
	}
	if s := c.Stats(); s.Entries != 0 || s.PinnedBytes != 0 {
		t.Fatalf("a failed acquire left state behind: %+v", s)
	}
}

// The limit is the process's, not one cache's: a cache with nothing to evict makes
// the process's other caches give up their unused entries.
func TestMemlockReclaimsFromOtherCaches(t *testing.T) {
	b := &memBudget{limit: 3 * pageSize}
	c1, reg1 := newBudgetCache(t, b)
	c2, _ := newBudgetCache(t, b)
	mem := pages(4)
	p := int(pageSize)
	mustRelease(t, c1, mustAcquire(t, c1, mem[:2*p]))
	r := mustAcquire(t, c2, mem[2*p:4*p])
	if !r.Cached() {
		t.Fatal("the other cache's unused entry was not reclaimed")
	}
	mustRelease(t, c2, r)
	if s := c1.Stats(); s.Evictions != 1 || s.Entries != 0 || reg1.liveCount() != 0 {
		t.Fatalf("first cache %+v, live %d", s, reg1.liveCount())
	}
	if s := c2.Stats(); s.MemlockRetries != 1 {
		t.Fatalf("second cache %+v", s)
	}
}

// Uncached registrations (a disabled cache, unwatchable memory) retry after
// eviction too.
func TestMemlockUncachedRetries(t *testing.T) {
	b := &memBudget{limit: 3 * pageSize}
	c1, _ := newBudgetCache(t, b)
	c2, reg2, _ := newTestCache(t, Options{Disable: true})
	reg2.budget = b
	mem := pages(4)
	p := int(pageSize)
	mustRelease(t, c1, mustAcquire(t, c1, mem[:2*p]))
	r := mustAcquire(t, c2, mem[2*p:4*p])
	mustRelease(t, c2, r)
	if s := c1.Stats(); s.Entries != 0 {
		t.Fatalf("first cache kept its entry: %+v", s)
	}
}

func TestParseLockedMemory(t *testing.T) {
	status := "Name:\tx\nVmPeak:\t 3776 kB\nVmLck:\t     1024 kB\nVmPin:\t    3072 kB\nVmHWM:\t 2284 kB\n"
	l, err := parseLockedMemory(strings.NewReader(status))
	if err != nil || l.Locked != 1<<20 || l.Pinned != 3<<20 || l.Total() != 4<<20 {
		t.Fatalf("%+v %v", l, err)
	}
	if _, err := parseLockedMemory(strings.NewReader("Name:\tx\n")); err == nil {
		t.Fatal("a status without VmLck parsed")
	}
}
