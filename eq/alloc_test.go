package eq

import (
	"context"
	"errors"
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
	must(t, c.AddTrigger(0, nop))

	// Each case returns nil when the path it names ran, and otherwise the result that
	// shows it did not, so that an error path cannot pass for the fast path. Results
	// are compared with == (errors.Is may allocate while unwrapping).
	cases := []struct {
		name string
		f    func() error
	}{
		{"Queue.Post+Get", func() error {
			if err := q.Post(&e); err != nil {
				return err
			}
			_, err := q.Get()
			return err
		}},
		{"Queue.Get empty", func() error { _, err := q.Get(); return want(err, ErrEQEmpty) }},
		{"Queue.Post overflow+Get", func() error {
			for i := 0; i < 65; i++ {
				if err := q.Post(&e); err != nil {
					return err
				}
			}
			for i := 0; i < 64; i++ {
				_, err := q.Get()
				if i == 0 {
					err = want(err, ErrEQDropped)
				}
				if err != nil {
					return err
				}
			}
			return nil
		}},
		{"Queue.Wait ready", func() error {
			if err := q.Post(&e); err != nil {
				return err
			}
			_, err := q.Wait(bg)
			return err
		}},
		{"Poll ready", func() error {
			if err := q.Post(&e); err != nil {
				return err
			}
			_, _, err := Poll(bg, qs)
			return err
		}},
		{"Counter.Get", func() error { _, err := c.Get(); return err }},
		{"Counter.Inc", func() error { return c.Inc(CTEvent{Success: 1}) }},
		{"Counter.Inc invalid", func() error { return want(c.Inc(CTEvent{Success: 1, Failure: 1}), errIncBoth) }},
		{"Counter.Set", func() error {
			v, err := c.Get()
			if err != nil {
				return err
			}
			return c.Set(v)
		}},
		{"Counter.Wait reached", func() error { _, err := c.Wait(bg, 0); return err }},
		{"PollCounters reached", func() error { _, _, err := PollCounters(bg, cs, tests); return err }},
		{"AddTrigger+Inc fires", func() error {
			v, err := c.Get()
			if err != nil {
				return err
			}
			th = v.Success + 1
			if err := c.AddTrigger(th, nop); err != nil {
				return err
			}
			return c.Inc(CTEvent{Success: 1})
		}},
		{"AddTrigger at reached threshold", func() error { return c.AddTrigger(0, nop) }},
	}
	for _, tc := range cases {
		if err := tc.f(); err != nil { // warm-up
			t.Fatalf("%s: %v", tc.name, err)
		}
		var bad error
		n := testing.AllocsPerRun(100, func() {
			if err := tc.f(); err != nil && bad == nil {
				bad = err
			}
		})
		if bad != nil {
			t.Errorf("%s: the measured path failed: %v", tc.name, bad)
		}
		if n != 0 {
			t.Errorf("%s: %v allocations per run, want 0", tc.name, n)
		}
	}
	if c.PendingTriggers() != 0 {
		t.Fatalf("%d triggers left pending", c.PendingTriggers())
	}
}

// errNotTaken says that a call meant to fail succeeded.
var errNotTaken = errors.New("the call succeeded where the path under test fails")

// want returns nil if err is target, and otherwise what was returned instead.
func want(err, target error) error {
	switch err {
	case target:
		return nil
	case nil:
		return errNotTaken
	}
	return err
}

type nopTrigger struct{}

func (nopTrigger) Fire() {}
