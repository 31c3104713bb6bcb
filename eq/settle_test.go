package eq

import (
	"testing"
	"time"
)

type blockingTrigger struct {
	entered, release chan struct{}
	fired            *[]int
	id               int
}

func (b *blockingTrigger) Fire() {
	if b.entered != nil {
		close(b.entered)
		<-b.release
	}
	*b.fired = append(*b.fired, b.id)
}

func (b *blockingTrigger) Cancel() {}

// An update that finds another goroutine firing leaves its ready triggers to that
// loop; Settle returns only once that loop has fired them.
func TestSettleWaitsForAnotherGoroutinesFiring(t *testing.T) {
	c := NewCounter()
	var fired []int
	first := &blockingTrigger{entered: make(chan struct{}), release: make(chan struct{}), fired: &fired, id: 1}
	if err := c.AddTrigger(1, first); err != nil {
		t.Fatal(err)
	}
	if err := c.AddTrigger(2, &blockingTrigger{fired: &fired, id: 2}); err != nil {
		t.Fatal(err)
	}
	go c.Inc(CTEvent{Success: 1})
	<-first.entered // the other goroutine is inside its firing loop
	if err := c.Inc(CTEvent{Success: 1}); err != nil {
		t.Fatal(err)
	}
	settled := make(chan struct{})
	go func() { c.Settle(); close(settled) }()
	select {
	case <-settled:
		t.Fatal("Settle returned while another goroutine was still firing")
	case <-time.After(20 * time.Millisecond):
	}
	close(first.release)
	select {
	case <-settled:
	case <-time.After(20 * time.Second):
		t.Fatal("Settle did not return after the firing loop ended")
	}
	if len(fired) != 2 || fired[0] != 1 || fired[1] != 2 {
		t.Fatalf("fired %v, want [1 2]", fired)
	}
}
