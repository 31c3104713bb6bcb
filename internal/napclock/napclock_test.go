package napclock

import (
	"sync"
	"testing"
	"time"
)

// lengths runs n naps back to back (each started as soon as the last ended, as
// helpers do while the application keeps polling) and returns their lengths.
func lengths(c *Clock, n int) []time.Duration {
	var ds []time.Duration
	for i := 0; i < n; i++ {
		ch := c.Nap()
		c.mu.Lock()
		ds = append(ds, c.last)
		c.mu.Unlock()
		<-ch
	}
	return ds
}

// lenient makes any nap that starts within a second of the last one follow
// it, so that a test goroutine scheduled late on a loaded host still does.
func lenient(t *testing.T) {
	old := followOn
	followOn = time.Second
	t.Cleanup(func() { followOn = old })
}

// TestNapsGrowWhileFollowedOn: naps that follow one another double from NapMin
// up to NapMax, and stay there.
func TestNapsGrowWhileFollowedOn(t *testing.T) {
	lenient(t)
	var c Clock
	got := lengths(&c, 7)
	want := []time.Duration{NapMin, 2 * NapMin, 4 * NapMin, 8 * NapMin, NapMax, NapMax, NapMax}
	if 16*NapMin != NapMax {
		t.Fatalf("NapMax %v is not NapMin doubled four times: update the expected lengths", NapMax)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("naps while the application polls: %v, want %v", got, want)
		}
	}
}

// TestNapsShrinkWhenStopped: after Stopped, the next nap is NapMin again, and
// after a pause between naps too.
func TestNapsShrinkWhenStopped(t *testing.T) {
	lenient(t)
	var c Clock
	lengths(&c, 4)
	c.Stopped()
	if got := lengths(&c, 2); got[0] != NapMin || got[1] != 2*NapMin {
		t.Fatalf("naps after Stopped: %v, want %v then %v", got, NapMin, 2*NapMin)
	}
	followOn = time.Millisecond
	lengths(&c, 3)
	time.Sleep(3 * time.Millisecond)
	if got := lengths(&c, 1); got[0] != NapMin {
		t.Fatalf("a nap started after a pause longer than followOn: %v, want %v", got[0], NapMin)
	}
}

// TestHelpersShareOneNap: helpers that wait at the same time share one nap,
// so they cost one wake, not one each.
func TestHelpersShareOneNap(t *testing.T) {
	var c Clock
	before := c.Naps()
	var wg sync.WaitGroup
	chans := make([]<-chan struct{}, 3)
	for i := range chans {
		chans[i] = c.Nap()
	}
	for _, ch := range chans {
		wg.Add(1)
		go func() { defer wg.Done(); <-ch }()
	}
	wg.Wait()
	if n := c.Naps() - before; n != 1 {
		t.Fatalf("three helpers waiting together started %d naps, want 1", n)
	}
}

// TestNapMaxBoundsPassiveTarget: however long the application polled, the nap
// its helpers are in when it stops calling the library without blocking is all
// a remote put or get to it waits before they serve it.
func TestNapMaxBoundsPassiveTarget(t *testing.T) {
	lenient(t)
	var c Clock
	for _, d := range lengths(&c, 12) {
		if d > 10*time.Millisecond {
			t.Fatalf("nap of %v while the application polls: a target that stops polling waits that long", d)
		}
	}
}
