package regcache

import (
	"testing"

	"github.com/goportals/goportals/driverhooks"
)

// source makes a notifier for one benchmark run and returns its cleanup.
type source struct {
	name string
	open func(b *testing.B) (driverhooks.Source, func())
}

// hitSources are the notifiers a hit is measured under: explicit invalidations only,
// and the userfaultfd monitor (skipped when the machine lacks it).
var hitSources = []source{
	{"notifier=explicit", func(b *testing.B) (driverhooks.Source, func()) { return newFakeSource(), func() {} }},
	{"notifier=uffd", func(b *testing.B) (driverhooks.Source, func()) {
		m, err := driverhooks.Open()
		if err != nil {
			b.Skip("userfaultfd unavailable: " + err.Error())
		}
		return driverhooks.NewNotifier(m), func() { m.Close() }
	}},
}

// BenchmarkCacheHit measures one hit (Acquire + Release) in a warm cache of 1,024
// one-page entries, visiting them in turn.
func BenchmarkCacheHit(b *testing.B) {
	for _, s := range hitSources {
		b.Run(s.name, func(b *testing.B) {
			src, done := s.open(b)
			defer done()
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
				if !r.Cached() {
					b.Fatal("warm-up region not cached")
				}
				if err := c.Release(r); err != nil {
					b.Fatal(err)
				}
			}
			if st := c.Stats(); st.Entries != n {
				b.Fatalf("warm-up left %d entries", st.Entries)
			}
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
			if st := c.Stats(); st.Misses != n {
				b.Fatalf("benchmark missed: %+v", st)
			}
		})
	}
}

// BenchmarkSameBuffer1MiB registers one 1 MiB buffer per operation, through the
// cache (a hit after the first) and directly with mlock + munlock each time.
func BenchmarkSameBuffer1MiB(b *testing.B) {
	const size = 1 << 20
	mem := pages(size / int(pageSize))
	for i := range mem {
		mem[i] = byte(i)
	}
	b.Run("cached", func(b *testing.B) {
		for _, s := range hitSources {
			b.Run(s.name, func(b *testing.B) {
				src, done := s.open(b)
				defer done()
				c, err := New[Pin](MlockRegistrar{}, Options{Source: src})
				if err != nil {
					b.Fatal(err)
				}
				defer c.Close()
				// The first acquire misses (mlock of the whole buffer); take it out of
				// the timing so that only hits are measured.
				r, err := c.Acquire(mem)
				if err != nil {
					b.Fatal(err)
				}
				if !r.Cached() {
					b.Fatal("warm-up region not cached")
				}
				if err := c.Release(r); err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					r, err := c.Acquire(mem)
					if err != nil {
						b.Fatal(err)
					}
					if err := c.Release(r); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				if st := c.Stats(); st.Misses != 1 || st.Fallbacks != 0 {
					b.Fatalf("stats %+v", st)
				}
			})
		}
	})
	b.Run("per-op", func(b *testing.B) {
		var reg MlockRegistrar
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			p, err := reg.Register(mem)
			if err != nil {
				b.Fatal(err)
			}
			if err := reg.Deregister(p); err != nil {
				b.Fatal(err)
			}
		}
	})
}
