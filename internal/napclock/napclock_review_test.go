package napclock

import (
	"sync"
	"testing"
	"time"
)

// TestReviewManyHelpersEveryNapEnds: helpers that nap, stop and count at once
// (run with -race) each get a nap that ends, and the clock counts one nap per
// distinct nap handed out, all within NapMax.
func TestReviewManyHelpersEveryNapEnds(t *testing.T) {
	lenient(t)
	var c Clock
	before := c.Naps()
	var mu sync.Mutex
	seen := map[<-chan struct{}]bool{}
	var wg sync.WaitGroup
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 40; i++ {
				ch := c.Nap()
				mu.Lock()
				seen[ch] = true
				mu.Unlock()
				if i%7 == g%7 {
					c.Stopped()
				}
				select {
				case <-ch:
				case <-time.After(10 * time.Second): // a hang guard, not a bound
					t.Error("a nap never ended")
					return
				}
				c.mu.Lock()
				if c.last > NapMax || c.last < NapMin {
					t.Errorf("a nap of %v", c.last)
				}
				c.mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if n := c.Naps() - before; n != uint64(len(seen)) {
		t.Fatalf("the clock counted %d naps, the helpers were handed %d", n, len(seen))
	}
}

// TestReviewStoppedMidNap: Stopped while a nap runs does not end it, and the
// nap after it is NapMin however long the naps had grown.
func TestReviewStoppedMidNap(t *testing.T) {
	lenient(t)
	var c Clock
	lengths(&c, 5)
	ch := c.Nap()
	c.Stopped()
	if again := c.Nap(); again != ch {
		t.Fatal("a nap asked for while one runs is not the running one")
	}
	<-ch
	if got := lengths(&c, 1); got[0] != NapMin {
		t.Fatalf("the nap after Stopped: %v, want %v", got[0], NapMin)
	}
}
