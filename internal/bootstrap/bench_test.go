package bootstrap

import (
	"sync"
	"testing"
)

// BenchmarkFence4 measures one Fence across 4 in-process ranks over TCP, each
// having put one 64-byte value, plus one Get of a peer's value.
func BenchmarkFence4(b *testing.B) {
	const n = 4
	s, err := NewServer(ServerConfig{Size: n})
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan struct{})
	go func() { s.Serve(b.Context()); close(done) }()
	defer func() { s.Close(); <-done }()
	cs := make([]*Client, n)
	for r := range n {
		if cs[r], err = Dial(b.Context(), s.ClientConfig(r)); err != nil {
			b.Fatal(err)
		}
		defer cs[r].Close()
	}
	val := make([]byte, 64)
	b.ResetTimer()
	var wg sync.WaitGroup
	for r := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := cs[r]
			for range b.N {
				if err := c.Put("v", val); err != nil {
					b.Error(err)
					return
				}
				if err := c.Fence(b.Context()); err != nil {
					b.Error(err)
					return
				}
				if _, err := c.Get(b.Context(), (r+1)%n, "v"); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}
