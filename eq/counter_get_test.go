package eq

import (
	"sync"
	"testing"
)

// TestGetNeverTornBySet: Get, which reads without the counter's lock, never
// returns half of one Set: a writer sets values whose two fields are equal, and
// every Get sees equal fields.
func TestGetNeverTornBySet(t *testing.T) {
	c := NewCounter()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := uint64(1); ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if err := c.Set(CTEvent{Success: i, Failure: i}); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for i := 0; i < 2000000; i++ {
		v, err := c.Get()
		if err != nil {
			t.Fatal(err)
		}
		if v.Success == 0 {
			i-- // the writer has not started: nothing to race with yet
			continue
		}
		if v.Success != v.Failure {
			close(stop)
			wg.Wait()
			t.Fatalf("Get returned %+v: half of one Set", v)
		}
	}
	close(stop)
	wg.Wait()
}

// TestGetAfterFree: Get of a freed counter is ErrFreed, whichever path it takes.
func TestGetAfterFree(t *testing.T) {
	cell := new(Cell)
	c := NewCounterAt(cell)
	if err := c.Inc(CTEvent{Success: 3}); err != nil {
		t.Fatal(err)
	}
	if v, err := c.Get(); err != nil || v.Success != 3 {
		t.Fatalf("Get: %+v %v", v, err)
	}
	if err := c.Free(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(); err != ErrFreed {
		t.Fatalf("Get after Free: %v, want ErrFreed", err)
	}
}

// TestGetAllocatesNothing: the polling read allocates nothing.
func TestGetAllocatesNothing(t *testing.T) {
	c := NewCounter()
	if n := testing.AllocsPerRun(1000, func() { c.Get() }); n != 0 {
		t.Fatalf("Get allocates %v times", n)
	}
}
