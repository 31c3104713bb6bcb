package eq

import (
	"context"
	"testing"
)

// TestFastPathsDoNotAllocate checks the paths the engine and a polling application run
// per operation.
func TestFastPathsDoNotAllocate(t *testing.T) {
	q := mustQueue(t, 64, 0)
	q2 := mustQueue(t, 64, 0)
	qs := []*Queue{q2, q}
	c := NewCounter()
	c2 := NewCounter()
	cs := []*Counter{c2, c}
	tests := []uint64{1 << 62, 0}
	e := Event{Type: EventPut, MatchBits: 42, MLength: 8}
	bg := context.Background()
	var th uint64
	var nop nopTrigger
	// Warm the trigger heap so its backing array exists.
	_ = c.AddTrigger(0, nop)

	cases := []struct {
		name string
		f    func()
	}{
		{"Queue.Post+Get", func() { _ = q.Post(&e); _, _ = q.Get() }},
		{"Queue.Get empty", func() { _, _ = q.Get() }},
		{"Queue.Post overflow+Get", func() {
			for i := 0; i < 65; i++ {
				_ = q.Post(&e)
			}
			for i := 0; i < 64; i++ {
				_, _ = q.Get()
			}
		}},
		{"Queue.Wait ready", func() { _ = q.Post(&e); _, _ = q.Wait(bg) }},
		{"Poll ready", func() { _ = q.Post(&e); _, _, _ = Poll(bg, qs) }},
		{"Counter.Get", func() { _, _ = c.Get() }},
		{"Counter.Inc", func() { _ = c.Inc(CTEvent{Success: 1}) }},
		{"Counter.Inc invalid", func() { _ = c.Inc(CTEvent{Success: 1, Failure: 1}) }},
		{"Counter.Set", func() { v, _ := c.Get(); _ = c.Set(v) }},
		{"Counter.Wait reached", func() { _, _ = c.Wait(bg, 0) }},
		{"PollCounters reached", func() { _, _, _ = PollCounters(bg, cs, tests) }},
		{"AddTrigger+Inc fires", func() {
			v, _ := c.Get()
			th = v.Success + 1
			_ = c.AddTrigger(th, nop)
			_ = c.Inc(CTEvent{Success: 1})
		}},
		{"AddTrigger at reached threshold", func() { _ = c.AddTrigger(0, nop) }},
	}
	for _, tc := range cases {
		tc.f() // warm-up
		if n := testing.AllocsPerRun(100, tc.f); n != 0 {
			t.Errorf("%s: %v allocations per run, want 0", tc.name, n)
		}
	}
	if c.PendingTriggers() != 0 {
		t.Fatalf("%d triggers left pending", c.PendingTriggers())
	}
}

type nopTrigger struct{}

func (nopTrigger) Fire() {}
