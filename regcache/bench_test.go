package regcache

import (
	"testing"
)

// BenchmarkCacheHit measures one hit (Acquire + Release) in a warm cache of 1,024
// one-page entries, visiting them in turn.
func BenchmarkCacheHit(b *testing.B) {
	src := newFakeSource()
	c, err := New[fakeReg](newFakeRegistrar(), Options{Source: src, MaxEntries: 2048})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	const n = 1024
	mem := pages(2 * n)
	p := int(pageSize)
	bufs := make([][]byte, n)
	for i := range bufs {
		bufs[i] = mem[2*i*p : 2*i*p+256]
		r, err := c.Acquire(bufs[i])
		if err != nil {
			b.Fatal(err)
		}
		c.Release(r)
	}
	if s := c.Stats(); s.Entries != n {
		b.Fatalf("warm-up left %d entries", s.Entries)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r, err := c.Acquire(bufs[i&(n-1)])
		if err != nil {
			b.Fatal(err)
		}
		c.Release(r)
	}
	b.StopTimer()
	if s := c.Stats(); s.Misses != n {
		b.Fatalf("benchmark missed: %+v", s)
	}
}
