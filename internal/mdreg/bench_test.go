package mdreg

import (
	"testing"

	"github.com/goportals/goportals/internal/verbs"
	"github.com/goportals/goportals/md"
	"github.com/goportals/goportals/regcache"
)

// BenchmarkPinHit measures Pin + SGEs + Release of a warm 64 KiB range (a pin-cache
// hit), through Pin (one allocation for the Pinned) and through PinInto (none).
func BenchmarkPinHit(b *testing.B) {
	for _, env := range envs {
		b.Run(env.Name, func(b *testing.B) {
			pair := newPair(b, env)
			r := newRegistry(b, pair.A.PD, regcache.Options{})
			m := md.Bytes(make([]byte, 64<<10))
			sg := make([]verbs.SGE, 0, 4)
			warm, err := r.Pin(m, 0, m.Len())
			skipMemlock(b, err)
			if err != nil {
				b.Fatal(err)
			}
			mustRelease(b, warm)
			if r.Stats().Fallbacks != 0 {
				b.Skip("the notifier cannot watch Go memory here: every pin registers")
			}
			b.Run("Pin", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					p, err := r.Pin(m, 0, m.Len())
					if err != nil {
						b.Fatal(err)
					}
					sg = p.SGEs(sg[:0])
					if err := p.Release(); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("PinInto", func(b *testing.B) {
				b.ReportAllocs()
				var p Pinned
				for b.Loop() {
					if err := r.PinInto(&p, m, 0, m.Len()); err != nil {
						b.Fatal(err)
					}
					sg = p.SGEs(sg[:0])
					if err := p.Release(); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}

// BenchmarkReadAtIovec copies 4 KiB out of the middle of a 64-piece iovec memory of
// 1 KiB pieces (five pieces touched, one binary search), against one 64 KiB slice.
func BenchmarkReadAtIovec(b *testing.B) {
	iov := make([][]byte, 64)
	for i := range iov {
		iov[i] = make([]byte, 1024)
	}
	im, err := md.Iovecs(iov)
	if err != nil {
		b.Fatal(err)
	}
	dst := make([]byte, 4096)
	for _, c := range []struct {
		name string
		m    md.Memory
	}{{"iovec64x1KiB", im}, {"bytes64KiB", md.Bytes(make([]byte, 64<<10))}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(dst)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.m.ReadAt(dst, 30000); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
