package eq

import (
	"context"
	"sync"
	"testing"
	"time"
	"unsafe"
)

// The first 16 bytes of a Cell are a ptl_ct_event_t: C code reads them in place.
func TestCellLayout(t *testing.T) {
	var c Cell
	if unsafe.Sizeof(c) != CellSize || unsafe.Offsetof(c.success) != 0 || unsafe.Offsetof(c.failure) != 8 {
		t.Fatalf("Cell: size %d, success at %d, failure at %d; want %d, 0, 8",
			unsafe.Sizeof(c), unsafe.Offsetof(c.success), unsafe.Offsetof(c.failure), CellSize)
	}
	cells := make([]Cell, 2)
	ct := NewCounterAt(&cells[1])
	if err := ct.Set(CTEvent{Success: 7, Failure: 2}); err != nil {
		t.Fatal(err)
	}
	words := (*[4]uint64)(unsafe.Pointer(&cells[1]))
	if words[0] != 7 || words[1] != 2 {
		t.Fatalf("cell words %v after Set(7, 2)", words[:2])
	}
	if v := cells[0].Load(); v != (CTEvent{}) {
		t.Fatalf("the neighbouring cell changed: %+v", v)
	}
}

// An outside add with nobody waiting needs no notice; with a waiter it does, and
// Notice wakes the waiter.
func TestCellAddWakesWaiterThroughNotice(t *testing.T) {
	var cell Cell
	c := NewCounterAt(&cell)
	if cell.Add(CTEvent{Success: 1}) {
		t.Fatal("Add asked for attention with no waiter and no trigger")
	}
	done := make(chan CTEvent, 1)
	go func() {
		v, err := c.Wait(context.Background(), 3)
		if err != nil {
			t.Error(err)
		}
		done <- v
	}()
	// The waiter registers at some point: keep adding one at a time until an add
	// reports attention, which must come before the waiter can be satisfied.
	deadline := time.Now().Add(time.Minute)
	for !cell.Add(CTEvent{}) {
		if time.Now().After(deadline) {
			t.Fatal("the waiter never raised the attention word")
		}
		time.Sleep(time.Millisecond)
	}
	if !cell.Add(CTEvent{Success: 2}) {
		t.Fatal("Add with a waiter registered did not ask for attention")
	}
	select {
	case v := <-done:
		t.Fatalf("the waiter returned %+v before Notice", v)
	case <-time.After(20 * time.Millisecond):
	}
	c.Notice()
	if v := <-done; v.Success != 3 {
		t.Fatalf("Wait returned %+v, want success 3", v)
	}
	if c.Cell().attention.Load() != 0 {
		t.Fatal("attention still raised with no waiter left")
	}
}

type fireCount struct{ n int }

func (f *fireCount) Fire() { f.n++ }

// A pending trigger raises attention; Notice fires it once the outside adds reach
// its threshold.
func TestCellAddFiresTriggerThroughNotice(t *testing.T) {
	var cell Cell
	c := NewCounterAt(&cell)
	f := &fireCount{}
	if err := c.AddTrigger(2, f); err != nil {
		t.Fatal(err)
	}
	if !cell.Add(CTEvent{Success: 1}) {
		t.Fatal("no attention with a trigger pending")
	}
	c.Notice()
	if f.n != 0 {
		t.Fatal("fired below its threshold")
	}
	cell.Add(CTEvent{Success: 1})
	c.Notice()
	if f.n != 1 {
		t.Fatalf("fired %d times, want 1", f.n)
	}
	if cell.Add(CTEvent{}) {
		t.Fatal("attention still raised with no trigger left")
	}
}

// Inc under the lock and outside adds race without losing either.
func TestCellAddRacesInc(t *testing.T) {
	var cell Cell
	c := NewCounterAt(&cell)
	const n = 2000
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for range n {
			cell.Add(CTEvent{Success: 1})
		}
	}()
	go func() {
		defer wg.Done()
		for range n {
			if err := c.Inc(CTEvent{Success: 1}); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	wg.Wait()
	if v, _ := c.Get(); v.Success != 2*n {
		t.Fatalf("success %d, want %d", v.Success, 2*n)
	}
}

// After Free the counter no longer reads or writes the caller's cell.
func TestCellLeftAtFree(t *testing.T) {
	var cell Cell
	c := NewCounterAt(&cell)
	c.Inc(CTEvent{Success: 4})
	if err := c.Free(); err != nil {
		t.Fatal(err)
	}
	cell.Add(CTEvent{Failure: 1}) // the cell's next owner
	if !c.Reached(4) || c.Reached(5) {
		t.Fatal("Reached after Free does not read the value the counter had")
	}
	if c.Cell() == &cell {
		t.Fatal("Cell still returns the caller's cell after Free")
	}
}
