package eq

import (
	"math"
	"sync"
	"testing"
)

// TestCellAddSaturates: outside adds saturate at the largest value instead of
// wrapping, also when several race across the top.
func TestCellAddSaturates(t *testing.T) {
	var c Cell
	c.success.Store(math.MaxUint64 - 10)
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 100; i++ {
				c.Add(CTEvent{Success: 3})
			}
		}()
	}
	wg.Wait()
	if v := c.Load(); v.Success != math.MaxUint64 {
		t.Fatalf("success %d, want saturation", v.Success)
	}
	c.failure.Store(5)
	c.Add(CTEvent{Failure: 2})
	if v := c.Load(); v.Failure != 7 {
		t.Fatalf("failure %d, want 7", v.Failure)
	}
}
