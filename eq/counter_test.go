package eq

import (
	"context"
	"errors"
	"math"
	"sync"
	"testing"
	"time"
)

// must fails the test at once if a setup step fails.
func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// check reports a failed step without stopping the test, for code that runs inside a
// trigger or on another goroutine.
func check(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Error(err)
	}
}

func ctGet(t *testing.T, c *Counter) CTEvent {
	t.Helper()
	v, err := c.Get()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestCounterSetInc follows the reference's conformance cases test_basic_ct-022..028.
func TestCounterSetInc(t *testing.T) {
	type op struct {
		set     bool
		v       CTEvent
		wantErr error
	}
	tests := []struct {
		name string
		ops  []op
		want CTEvent
	}{
		{"new is zero", nil, CTEvent{}},
		{"set", []op{{set: true, v: CTEvent{7, 3}}}, CTEvent{7, 3}},
		{"inc success", []op{{v: CTEvent{Success: 1}}, {v: CTEvent{Success: 4}}}, CTEvent{5, 0}},
		{"inc failure", []op{{v: CTEvent{Failure: 3}}}, CTEvent{0, 3}},
		{"set then inc success", []op{{set: true, v: CTEvent{7, 3}}, {v: CTEvent{Success: 1}}}, CTEvent{8, 3}},
		{"set then inc failure", []op{{set: true, v: CTEvent{7, 3}}, {v: CTEvent{Failure: 3}}}, CTEvent{7, 6}},
		{"inc both is invalid", []op{{v: CTEvent{7, 3}, wantErr: ErrInvalid}}, CTEvent{}},
		{"inc zero", []op{{set: true, v: CTEvent{1, 1}}, {v: CTEvent{}}}, CTEvent{1, 1}},
		{"set lowers", []op{{set: true, v: CTEvent{9, 9}}, {set: true, v: CTEvent{1, 0}}}, CTEvent{1, 0}},
		{"success overflow", []op{{set: true, v: CTEvent{math.MaxUint64, 0}}, {v: CTEvent{Success: 1}, wantErr: ErrCounterOverflow}}, CTEvent{math.MaxUint64, 0}},
		{"failure overflow", []op{{set: true, v: CTEvent{0, math.MaxUint64 - 1}}, {v: CTEvent{Failure: 2}, wantErr: ErrCounterOverflow}}, CTEvent{0, math.MaxUint64 - 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := NewCounter()
			for _, o := range tc.ops {
				var err error
				if o.set {
					err = c.Set(o.v)
				} else {
					err = c.Inc(o.v)
				}
				if !errors.Is(err, o.wantErr) || (o.wantErr == nil && err != nil) {
					t.Fatalf("op %+v: err %v, want %v", o, err, o.wantErr)
				}
			}
			if got := ctGet(t, c); got != tc.want {
				t.Fatalf("value %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestCounterWaitCondition checks the reference's PtlCTWait/PtlCTPoll condition:
// success >= test or failure != 0 (test_basic_ct-029, -034..-037).
func TestCounterWaitCondition(t *testing.T) {
	tests := []struct {
		v       CTEvent
		test    uint64
		reached bool
	}{
		{CTEvent{10, 0}, 10, true}, // ct-029, ct-034
		{CTEvent{7, 1}, 10, true},  // ct-035: any failure ends the wait
		{CTEvent{5, 0}, 10, false}, // ct-036: CT_NONE_REACHED
		{CTEvent{5, 1}, 10, true},  // ct-037
		{CTEvent{11, 0}, 10, true}, // past the test
		{CTEvent{0, 0}, 0, true},   // test 0 is always reached
		{CTEvent{9, 0}, 10, false}, // one short
		{CTEvent{0, 0}, 1, false},  // nothing yet
		{CTEvent{math.MaxUint64, 0}, math.MaxUint64, true},
	}
	for _, tc := range tests {
		c := NewCounter()
		must(t, c.Set(tc.v))
		v, err := c.Wait(expired(), tc.test)
		if tc.reached {
			if err != nil || v != tc.v {
				t.Errorf("%+v test %d: Wait = %+v, %v; want reached", tc.v, tc.test, v, err)
			}
		} else if !errors.Is(err, ErrCTNoneReached) || !errors.Is(err, context.Canceled) {
			t.Errorf("%+v test %d: Wait err = %v; want ErrCTNoneReached", tc.v, tc.test, err)
		}
		cs := []*Counter{c}
		_, which, err := PollCounters(expired(), cs, []uint64{tc.test})
		if tc.reached != (err == nil) || (tc.reached && which != 0) {
			t.Errorf("%+v test %d: PollCounters = %d, %v", tc.v, tc.test, which, err)
		}
	}
}

func ctWaiters(c *Counter) func() int {
	return func() int { c.mu.Lock(); defer c.mu.Unlock(); return len(c.waiters) }
}

// TestCounterWaitUntilInc is test_basic_ct-031 and -032: a waiter blocks until another
// goroutine brings the counter to the test.
func TestCounterWaitUntilUpdate(t *testing.T) {
	tests := []struct {
		name   string
		update func(c *Counter) error
		want   CTEvent
	}{
		{"inc ten times", func(c *Counter) error {
			for i := 0; i < 10; i++ {
				if err := c.Inc(CTEvent{Success: 1}); err != nil {
					return err
				}
			}
			return nil
		}, CTEvent{10, 0}},
		{"set", func(c *Counter) error { return c.Set(CTEvent{5, 5}) }, CTEvent{5, 5}},
		{"failure", func(c *Counter) error { return c.Inc(CTEvent{Failure: 1}) }, CTEvent{0, 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := NewCounter()
			out := make(chan struct {
				v   CTEvent
				err error
			})
			go func() {
				v, err := c.Wait(context.Background(), 10)
				out <- struct {
					v   CTEvent
					err error
				}{v, err}
			}()
			waitForWaiters(t, ctWaiters(c), 1)
			must(t, tc.update(c))
			r := <-out
			if r.err != nil || r.v != tc.want {
				t.Fatalf("Wait = %+v, %v; want %+v", r.v, r.err, tc.want)
			}
		})
	}
}

// TestCounterFreeInterruptsWaiters is test_basic_ct-033 (which hangs in the reference):
// every goroutine blocked on a counter returns ErrInterrupted when it is freed.
func TestCounterFreeInterruptsWaiters(t *testing.T) {
	c := NewCounter()
	other := NewCounter()
	const waiters = 3
	errs := make(chan error, waiters+1)
	for i := 0; i < waiters; i++ {
		go func() {
			_, err := c.Wait(context.Background(), 100)
			errs <- err
		}()
	}
	go func() {
		_, which, err := PollCounters(context.Background(), []*Counter{other, c}, []uint64{5, 5})
		if which != 1 {
			err = errors.New("wrong index")
		}
		errs <- err
	}()
	waitForWaiters(t, ctWaiters(c), waiters+1)
	if err := c.Free(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < waiters+1; i++ {
		if err := <-errs; !errors.Is(err, ErrInterrupted) {
			t.Fatalf("waiter returned %v, want ErrInterrupted", err)
		}
	}
	if n := ctWaiters(other)(); n != 0 {
		t.Fatalf("%d registrations left on the other counter", n)
	}
}

func TestCounterAfterFree(t *testing.T) {
	c := NewCounter()
	must(t, c.Set(CTEvent{3, 0}))
	if err := c.Free(); err != nil {
		t.Fatal(err)
	}
	calls := []struct {
		name string
		err  error
	}{
		{"Free", c.Free()},
		{"Set", c.Set(CTEvent{1, 1})},
		{"Inc", c.Inc(CTEvent{Success: 1})},
		{"Get", func() error { _, err := c.Get(); return err }()},
		{"Wait", func() error { _, err := c.Wait(context.Background(), 0); return err }()},
		{"PollCounters", func() error {
			_, _, err := PollCounters(context.Background(), []*Counter{c}, []uint64{0})
			return err
		}()},
		{"AddTrigger", c.AddTrigger(0, TriggerFunc(func() { t.Error("fired on freed counter") }))},
		{"CancelTriggered", func() error { _, err := c.CancelTriggered(); return err }()},
	}
	for _, call := range calls {
		if !errors.Is(call.err, ErrFreed) {
			t.Errorf("%s after Free = %v, want ErrFreed", call.name, call.err)
		}
	}
}

// TestPollCounters is test_basic_ct-039 and -040: two pollers, one whose test is met
// and one that times out.
func TestPollCounters(t *testing.T) {
	c := NewCounter()
	type res struct {
		which int
		err   error
	}
	met := make(chan res)
	missed := make(chan res)
	go func() {
		_, which, err := PollCounters(context.Background(), []*Counter{c}, []uint64{10})
		met <- res{which, err}
	}()
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		_, which, err := PollCounters(ctx, []*Counter{c}, []uint64{15})
		missed <- res{which, err}
	}()
	waitForWaiters(t, ctWaiters(c), 2)
	for i := 0; i < 10; i++ {
		must(t, c.Inc(CTEvent{Success: 1}))
	}
	if r := <-met; r.err != nil || r.which != 0 {
		t.Fatalf("poller with test 10 = %+v", r)
	}
	cancel()
	if r := <-missed; !errors.Is(r.err, ErrCTNoneReached) || r.which != -1 {
		t.Fatalf("poller with test 15 = %+v", r)
	}
}

func TestPollCountersWhichAndArgs(t *testing.T) {
	a, b, c := NewCounter(), NewCounter(), NewCounter()
	must(t, b.Set(CTEvent{3, 0}))
	must(t, c.Set(CTEvent{9, 0}))
	v, which, err := PollCounters(expired(), []*Counter{a, b, c}, []uint64{1, 5, 9})
	if err != nil || which != 2 || v != (CTEvent{9, 0}) {
		t.Fatalf("PollCounters = %+v %d %v; want c", v, which, err)
	}
	bad := []struct {
		name  string
		cs    []*Counter
		tests []uint64
		which int
	}{
		{"empty", nil, nil, -1},
		{"length mismatch", []*Counter{a}, []uint64{1, 2}, -1},
		{"nil counter", []*Counter{a, nil}, []uint64{1, 2}, 1},
	}
	for _, tc := range bad {
		if _, which, err := PollCounters(context.Background(), tc.cs, tc.tests); !errors.Is(err, ErrInvalid) || which != tc.which {
			t.Errorf("%s: PollCounters = %d %v; want %d ErrInvalid", tc.name, which, err, tc.which)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	if _, _, err := PollCounters(ctx, []*Counter{a, b}, []uint64{1, 5}); !errors.Is(err, ErrCTNoneReached) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("timeout: %v", err)
	}
}

// TestCounterConcurrentInc has several goroutines increment while waiters wait for the
// total: the final value is exact and every waiter returns.
func TestCounterConcurrentInc(t *testing.T) {
	const incers, per = 4, 2500
	c := NewCounter()
	var wg sync.WaitGroup
	waitErrs := make(chan error, 3)
	for i := 0; i < 3; i++ {
		go func(test uint64) {
			_, err := c.Wait(context.Background(), test)
			waitErrs <- err
		}(uint64((i + 1) * incers * per / 3))
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
				if _, err := c.Get(); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	for i := 0; i < 3; i++ {
		if err := <-waitErrs; err != nil {
			t.Fatal(err)
		}
	}
	if v := ctGet(t, c); v.Success != incers*per {
		t.Fatalf("success = %d, want %d", v.Success, incers*per)
	}
}
