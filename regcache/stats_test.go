package regcache

import (
	"runtime"
	"testing"

	"github.com/goportals/goportals/driverhooks"
)

// Stats say which notifier keeps the cache coherent, what a hit is worth with it,
// the cache's limits and the process's locked memory.
func TestStatsDescribeNotifierAndLimits(t *testing.T) {
	n := driverhooks.NewNotifier(nil)
	c, err := New[fakeReg](newFakeRegistrar(), Options{Source: n, MaxBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s := c.Stats()
	if s.Notifier != driverhooks.KindExplicit || s.Guarantee != n.Guarantee() || s.Guarantee == "" {
		t.Errorf("notifier %q guarantee %q, want %q %q", s.Notifier, s.Guarantee, driverhooks.KindExplicit, n.Guarantee())
	}
	if _, maxBytes, memlock := c.Limits(); s.MaxBytes != maxBytes || s.MemlockLimit != memlock || s.MaxBytes > 1<<20 {
		t.Errorf("limits in stats %d/%d, Limits %d/%d", s.MaxBytes, s.MemlockLimit, maxBytes, memlock)
	}
	if l, err := ReadLockedMemory(); err == nil && runtime.GOOS == "linux" && l.Total() > 0 && s.Locked.Total() == 0 {
		t.Errorf("stats report no locked memory, the kernel %+v", l)
	}
	// A Source that does not describe itself leaves the fields empty.
	c2, _, _ := newTestCache(t, Options{})
	if s := c2.Stats(); s.Notifier != "" || s.Guarantee != "" {
		t.Errorf("fake source described as %q %q", s.Notifier, s.Guarantee)
	}
}
