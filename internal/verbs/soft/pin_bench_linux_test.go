//go:build linux

package soft

import (
	"errors"
	"testing"

	"github.com/goportals/goportals/internal/verbs"
)

// BenchmarkRegDereg measures one RegMR plus its Dereg of touched memory with each
// pin method (the pin and unpin, the page-map snapshot, the MR table entry).
func BenchmarkRegDereg(b *testing.B) {
	for _, method := range []string{PinIOUring, PinMlock} {
		for _, size := range []struct {
			name string
			n    int
		}{{"4KiB", 4 << 10}, {"64KiB", 64 << 10}, {"1MiB", 1 << 20}, {"16MiB", 16 << 20}, {"64MiB", 64 << 20}} {
			b.Run(method+"/"+size.name, func(b *testing.B) {
				c, err := openPinned(method)
				if errors.Is(err, verbs.ErrNotSupported) {
					b.Skipf("%s: %v", method, err)
				}
				if err != nil {
					b.Fatal(err)
				}
				defer c.Close()
				pd, err := c.AllocPD()
				if err != nil {
					b.Fatal(err)
				}
				mem := anonPages(b, size.n/pageSize)
				b.SetBytes(int64(size.n))
				for b.Loop() {
					m, err := pd.RegMR(mem, rw)
					if err != nil {
						b.Fatal(err)
					}
					if err := m.Dereg(); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkOpenClose measures opening and closing a context with each pin method
// (io_uring adds the ring and its empty buffer table).
func BenchmarkOpenClose(b *testing.B) {
	for _, method := range []string{PinIOUring, PinMlock} {
		b.Run(method, func(b *testing.B) {
			for b.Loop() {
				c, err := openPinned(method)
				if err != nil {
					b.Fatal(err)
				}
				c.Close()
			}
		})
	}
}
