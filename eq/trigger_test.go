package eq

import (
	"errors"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
)

// recorder collects the ids of fired and cancelled triggers.
type recorder struct {
	mu        sync.Mutex
	fired     []int
	cancelled []int
}

type recTrigger struct {
	r  *recorder
	id int
}

func (t recTrigger) Fire() {
	t.r.mu.Lock()
	t.r.fired = append(t.r.fired, t.id)
	t.r.mu.Unlock()
}

func (t recTrigger) Cancel() {
	t.r.mu.Lock()
	t.r.cancelled = append(t.r.cancelled, t.id)
	t.r.mu.Unlock()
}

func (r *recorder) firedSnapshot() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.fired)
}

type step struct {
	op        string // "add", "inc", "set"
	threshold uint64 // add
	id        int    // add
	v         CTEvent
	fired     []int // ids fired by this step, in order
}

func TestTriggerOrder(t *testing.T) {
	s := func(n uint64) CTEvent { return CTEvent{Success: n} }
	tests := []struct {
		name  string
		steps []step
	}{
		{"threshold order on one jump", []step{
			{op: "add", threshold: 5, id: 1}, {op: "add", threshold: 3, id: 2}, {op: "add", threshold: 4, id: 3},
			{op: "set", v: s(10), fired: []int{2, 3, 1}},
		}},
		{"ties in registration order", []step{
			{op: "add", threshold: 3, id: 1}, {op: "add", threshold: 3, id: 2}, {op: "add", threshold: 2, id: 3},
			{op: "add", threshold: 3, id: 4},
			{op: "inc", v: s(3), fired: []int{3, 1, 2, 4}},
		}},
		{"one at a time", []step{
			{op: "add", threshold: 1, id: 1}, {op: "add", threshold: 2, id: 2}, {op: "add", threshold: 3, id: 3},
			{op: "inc", v: s(1), fired: []int{1}}, {op: "inc", v: s(1), fired: []int{2}},
			{op: "inc", v: s(1), fired: []int{3}}, {op: "inc", v: s(1)},
		}},
		{"inc jumps past several", []step{
			{op: "add", threshold: 2, id: 2}, {op: "add", threshold: 8, id: 8}, {op: "add", threshold: 4, id: 4},
			{op: "add", threshold: 6, id: 6},
			{op: "inc", v: s(5), fired: []int{2, 4}}, {op: "inc", v: s(5), fired: []int{6, 8}},
		}},
		{"failures count toward thresholds", []step{
			{op: "add", threshold: 3, id: 1},
			{op: "inc", v: CTEvent{Failure: 2}}, {op: "inc", v: s(1), fired: []int{1}},
		}},
		{"set with both fields", []step{
			{op: "add", threshold: 10, id: 1}, {op: "add", threshold: 11, id: 2},
			{op: "set", v: CTEvent{5, 5}, fired: []int{1}},
		}},
		{"fires exactly once", []step{
			{op: "add", threshold: 2, id: 1},
			{op: "set", v: s(5), fired: []int{1}}, {op: "set", v: s(0)}, {op: "set", v: s(5)}, {op: "inc", v: s(1)},
		}},
		{"lowering keeps pending", []step{
			{op: "add", threshold: 3, id: 1}, {op: "add", threshold: 10, id: 2},
			{op: "set", v: s(5), fired: []int{1}}, {op: "set", v: s(0)},
			{op: "inc", v: s(9)}, {op: "inc", v: s(1), fired: []int{2}},
		}},
		{"already reached fires on add", []step{
			{op: "set", v: s(5)},
			{op: "add", threshold: 3, id: 1, fired: []int{1}}, {op: "add", threshold: 5, id: 2, fired: []int{2}},
			{op: "add", threshold: 6, id: 3}, {op: "inc", v: s(1), fired: []int{3}},
		}},
		{"threshold zero", []step{{op: "add", threshold: 0, id: 1, fired: []int{1}}}},
		{"saturated total", []step{
			{op: "add", threshold: math.MaxUint64, id: 1},
			{op: "set", v: CTEvent{math.MaxUint64 - 1, 0}},
			{op: "set", v: CTEvent{math.MaxUint64, math.MaxUint64}, fired: []int{1}},
		}},
		{"failed inc fires nothing", []step{
			{op: "add", threshold: 1, id: 1},
			{op: "inc", v: CTEvent{1, 1}},
			{op: "inc", v: s(1), fired: []int{1}},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := NewCounter()
			r := &recorder{}
			var want []int
			for i, st := range tc.steps {
				switch st.op {
				case "add":
					if err := c.AddTrigger(st.threshold, recTrigger{r, st.id}); err != nil {
						t.Fatal(err)
					}
				case "inc":
					_ = c.Inc(st.v) // the invalid increment is the point of one case
				case "set":
					if err := c.Set(st.v); err != nil {
						t.Fatal(err)
					}
				}
				want = append(want, st.fired...)
				if got := r.firedSnapshot(); !slices.Equal(got, want) {
					t.Fatalf("after step %d (%s): fired %v, want %v", i, st.op, got, want)
				}
			}
		})
	}
}

func TestAddTriggerNil(t *testing.T) {
	c := NewCounter()
	if err := c.AddTrigger(1, nil); !errors.Is(err, ErrInvalid) {
		t.Fatalf("AddTrigger(nil) = %v, want ErrInvalid", err)
	}
	if c.PendingTriggers() != 0 {
		t.Fatal("nil trigger was kept")
	}
}

// TestTriggerIncSameCounter chains 100000 triggers that each increment their own
// counter: one Inc fires them all, in order, without deep recursion.
func TestTriggerIncSameCounter(t *testing.T) {
	const n = 100000
	c := NewCounter()
	next := uint64(1)
	for i := uint64(1); i <= n; i++ {
		th := i
		if err := c.AddTrigger(th, TriggerFunc(func() {
			if th != next {
				t.Errorf("fired %d, want %d", th, next)
			}
			next++
			if err := c.Inc(CTEvent{Success: 1}); err != nil {
				t.Error(err)
			}
		})); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Inc(CTEvent{Success: 1}); err != nil {
		t.Fatal(err)
	}
	if next != n+1 || c.PendingTriggers() != 0 {
		t.Fatalf("fired up to %d, %d pending", next-1, c.PendingTriggers())
	}
	if v := ctGet(t, c); v.Success != n+1 {
		t.Fatalf("success = %d, want %d", v.Success, n+1)
	}
}

// TestTriggerPingPong expresses PtlTriggeredCTInc between two counters that trigger each
// other 10000 times: no deadlock, and the nesting stays bounded.
func TestTriggerPingPong(t *testing.T) {
	const n = 10000
	a, b := NewCounter(), NewCounter()
	var order []string
	for k := uint64(1); k <= n; k++ {
		must(t, a.AddTrigger(k, TriggerFunc(func() { order = append(order, "a"); check(t, b.Inc(CTEvent{Success: 1})) })))
		must(t, b.AddTrigger(k, TriggerFunc(func() { order = append(order, "b"); check(t, a.Inc(CTEvent{Success: 1})) })))
	}
	if err := a.Inc(CTEvent{Success: 1}); err != nil {
		t.Fatal(err)
	}
	if len(order) != 2*n {
		t.Fatalf("%d triggers fired, want %d", len(order), 2*n)
	}
	for i, s := range order {
		if want := []string{"a", "b"}[i%2]; s != want {
			t.Fatalf("order[%d] = %s, want %s", i, s, want)
		}
	}
	if va, vb := ctGet(t, a), ctGet(t, b); va.Success != n+1 || vb.Success != n {
		t.Fatalf("a = %+v, b = %+v", va, vb)
	}
}

// TestTriggeredCTSet expresses PtlTriggeredCTSet: a trigger on one counter sets
// another, whose own trigger then fires.
func TestTriggeredCTSet(t *testing.T) {
	src, dst := NewCounter(), NewCounter()
	r := &recorder{}
	must(t, dst.AddTrigger(7, recTrigger{r, 1}))
	must(t, src.AddTrigger(2, TriggerFunc(func() { check(t, dst.Set(CTEvent{Success: 7})) })))
	must(t, src.Inc(CTEvent{Success: 1}))
	if v := ctGet(t, dst); v != (CTEvent{}) {
		t.Fatalf("dst set early: %+v", v)
	}
	must(t, src.Inc(CTEvent{Success: 1}))
	if v := ctGet(t, dst); v != (CTEvent{Success: 7}) || !slices.Equal(r.firedSnapshot(), []int{1}) {
		t.Fatalf("dst = %+v, fired %v", v, r.firedSnapshot())
	}
}

// TestTriggerAddedFromTrigger registers, from inside a trigger, a trigger whose
// threshold is already reached: it fires after the current one returns and before the
// outer Inc returns.
func TestTriggerAddedFromTrigger(t *testing.T) {
	c := NewCounter()
	r := &recorder{}
	must(t, c.AddTrigger(1, TriggerFunc(func() {
		r.fired = append(r.fired, 1)
		check(t, c.AddTrigger(0, recTrigger{r, 3}))
		r.fired = append(r.fired, 2)
	})))
	must(t, c.Inc(CTEvent{Success: 1}))
	if got := r.firedSnapshot(); !slices.Equal(got, []int{1, 2, 3}) {
		t.Fatalf("fired %v, want [1 2 3]", got)
	}
}

func TestCancelTriggered(t *testing.T) {
	c := NewCounter()
	r := &recorder{}
	must(t, c.AddTrigger(9, recTrigger{r, 9}))
	must(t, c.AddTrigger(3, recTrigger{r, 3}))
	must(t, c.AddTrigger(5, TriggerFunc(func() { t.Error("cancelled func trigger fired") })))
	must(t, c.AddTrigger(3, recTrigger{r, 4}))
	must(t, c.Set(CTEvent{Success: 1}))
	n, err := c.CancelTriggered()
	if err != nil || n != 4 {
		t.Fatalf("CancelTriggered = %d, %v; want 4", n, err)
	}
	if !slices.Equal(r.cancelled, []int{3, 4, 9}) || len(r.fired) != 0 || c.PendingTriggers() != 0 {
		t.Fatalf("cancelled %v fired %v pending %d", r.cancelled, r.fired, c.PendingTriggers())
	}
	if v := ctGet(t, c); v != (CTEvent{Success: 1}) {
		t.Fatalf("CancelTriggered changed the value: %+v", v)
	}
	must(t, c.Inc(CTEvent{Success: 20}))
	if len(r.fired) != 0 {
		t.Fatalf("cancelled triggers fired: %v", r.fired)
	}
	// The counter takes new triggers afterwards.
	must(t, c.AddTrigger(30, recTrigger{r, 30}))
	must(t, c.Inc(CTEvent{Success: 10}))
	if !slices.Equal(r.firedSnapshot(), []int{30}) {
		t.Fatalf("fired %v, want [30]", r.fired)
	}
	if n, err := c.CancelTriggered(); err != nil || n != 0 {
		t.Fatalf("second CancelTriggered dropped %d, %v", n, err)
	}
}

func TestFreeCancelsTriggers(t *testing.T) {
	c := NewCounter()
	r := &recorder{}
	must(t, c.AddTrigger(1, recTrigger{r, 1}))
	must(t, c.AddTrigger(5, recTrigger{r, 5}))
	must(t, c.AddTrigger(2, recTrigger{r, 2}))
	must(t, c.Inc(CTEvent{Success: 1}))
	if err := c.Free(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(r.fired, []int{1}) || !slices.Equal(r.cancelled, []int{2, 5}) {
		t.Fatalf("fired %v cancelled %v", r.fired, r.cancelled)
	}
}

// TestTriggerPanicDoesNotWedge: a trigger that panics ends that update, and the
// counter's remaining triggers still fire on the next update.
func TestTriggerPanicDoesNotWedge(t *testing.T) {
	c := NewCounter()
	r := &recorder{}
	must(t, c.AddTrigger(1, TriggerFunc(func() { panic("boom") })))
	must(t, c.AddTrigger(1, recTrigger{r, 2}))
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("panic did not reach the caller")
			}
		}()
		_ = c.Inc(CTEvent{Success: 1}) // panics
	}()
	must(t, c.Inc(CTEvent{Success: 1}))
	if !slices.Equal(r.firedSnapshot(), []int{2}) {
		t.Fatalf("fired %v, want [2]", r.fired)
	}
}

// TestTriggersConcurrent increments from several goroutines while others register
// triggers: every trigger fires exactly once, and triggers of one counter fire in
// threshold order.
func TestTriggersConcurrent(t *testing.T) {
	const incers, per, adders, adds = 4, 500, 2, 500
	c := NewCounter()
	var fires [adders * adds]atomic.Int32
	var mu sync.Mutex
	var order []uint64
	var wg sync.WaitGroup
	for a := 0; a < adders; a++ {
		wg.Add(1)
		go func(a int) {
			defer wg.Done()
			for i := 0; i < adds; i++ {
				id := a*adds + i
				th := uint64(i * incers * per / adds)
				if err := c.AddTrigger(th, TriggerFunc(func() {
					fires[id].Add(1)
					mu.Lock()
					order = append(order, th)
					mu.Unlock()
				})); err != nil {
					t.Error(err)
				}
			}
		}(a)
	}
	for i := 0; i < incers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < per; j++ {
				if err := c.Inc(CTEvent{Success: 1}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	for id := range fires {
		if n := fires[id].Load(); n != 1 {
			t.Fatalf("trigger %d fired %d times", id, n)
		}
	}
	if c.PendingTriggers() != 0 {
		t.Fatalf("%d pending", c.PendingTriggers())
	}
	// Registration and increments interleave, so a trigger registered late at a reached
	// threshold may fire after higher ones; only count exactness is global. Order is
	// checked in TestTriggerOrder.
	if len(order) != adders*adds {
		t.Fatalf("%d fired", len(order))
	}
}

// TestFreeRacesFiring frees a counter while another goroutine's increments fire its
// triggers: each trigger either fires or is cancelled, exactly once.
func TestFreeRacesFiring(t *testing.T) {
	const n = 2000
	for round := 0; round < 5; round++ {
		c := NewCounter()
		var fired, cancelled [n]atomic.Int32
		for i := 0; i < n; i++ {
			must(t, c.AddTrigger(uint64(i+1), &countTrigger{&fired[i], &cancelled[i]}))
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			for i := 0; i < n; i++ {
				if err := c.Inc(CTEvent{Success: 1}); err != nil {
					return
				}
			}
		}()
		must(t, c.Free())
		<-done
		for i := 0; i < n; i++ {
			if f, x := fired[i].Load(), cancelled[i].Load(); f+x != 1 {
				t.Fatalf("round %d trigger %d: fired %d cancelled %d", round, i, f, x)
			}
		}
	}
}

type countTrigger struct{ fired, cancelled *atomic.Int32 }

func (c *countTrigger) Fire()   { c.fired.Add(1) }
func (c *countTrigger) Cancel() { c.cancelled.Add(1) }
