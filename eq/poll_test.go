package eq

import (
	"context"
	"errors"
	"testing"
	"time"
)

// expired returns a context that has already ended: it turns Wait and Poll into
// non-blocking checks.
func expired() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

type result struct {
	ev    Event
	which int
	err   error
}

func TestQueueWaitWokenByPost(t *testing.T) {
	q := mustQueue(t, 4, 0)
	out := make(chan result)
	go func() {
		e, err := q.Wait(context.Background())
		out <- result{ev: e, err: err}
	}()
	waitForWaiters(t, func() int { q.mu.Lock(); defer q.mu.Unlock(); return len(q.waiters) }, 1)
	if err := q.Post(ev(7)); err != nil {
		t.Fatal(err)
	}
	r := <-out
	if r.err != nil || r.ev.MatchBits != 7 {
		t.Fatalf("Wait = %d, %v", r.ev.MatchBits, r.err)
	}
	if n := len(q.waiters); n != 0 {
		t.Fatalf("%d waiters left registered", n)
	}
}

// waitForWaiters polls (with a generous bound, never a timing assertion) until n
// waiters are registered, so a test knows the goroutine is really blocked.
func waitForWaiters(t *testing.T, count func() int, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for count() < n {
		if time.Now().After(deadline) {
			t.Fatalf("waiters never registered: %d < %d", count(), n)
		}
		time.Sleep(100 * time.Microsecond)
	}
}

func TestQueueWaitEnds(t *testing.T) {
	tests := []struct {
		name    string
		ctx     func() (context.Context, context.CancelFunc)
		act     func(t *testing.T, q *Queue)
		wantErr []error
	}{
		{"deadline", func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), time.Millisecond)
		}, nil, []error{ErrEQEmpty, context.DeadlineExceeded}},
		{"cancel", func() (context.Context, context.CancelFunc) {
			return context.WithCancel(context.Background())
		}, nil, []error{ErrEQEmpty, context.Canceled}},
		{"free", func() (context.Context, context.CancelFunc) {
			return context.WithCancel(context.Background())
		}, func(t *testing.T, q *Queue) { must(t, q.Free()) }, []error{ErrInterrupted}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q := mustQueue(t, 1, 0)
			ctx, cancel := tc.ctx()
			defer cancel()
			out := make(chan error)
			go func() {
				_, err := q.Wait(ctx)
				out <- err
			}()
			if tc.name != "deadline" { // a 1 ms deadline may end the wait before we look
				waitForWaiters(t, func() int { q.mu.Lock(); defer q.mu.Unlock(); return len(q.waiters) }, 1)
			}
			if tc.act != nil {
				tc.act(t, q)
			} else if tc.name == "cancel" {
				cancel()
			}
			err := <-out
			for _, w := range tc.wantErr {
				if !errors.Is(err, w) {
					t.Errorf("err = %v, want %v", err, w)
				}
			}
		})
	}
}

func TestQueueWaitReadyAndFreed(t *testing.T) {
	q := mustQueue(t, 1, 0)
	must(t, q.Post(ev(1)))
	must(t, q.Post(ev(2))) // overwrites 1
	e, err := q.Wait(expired())
	if !errors.Is(err, ErrEQDropped) || e.MatchBits != 2 {
		t.Fatalf("Wait = %d, %v; want 2, ErrEQDropped", e.MatchBits, err)
	}
	if _, err := q.Wait(expired()); !errors.Is(err, ErrEQEmpty) || !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait on empty with expired ctx = %v", err)
	}
	must(t, q.Free())
	if _, err := q.Wait(context.Background()); !errors.Is(err, ErrFreed) {
		t.Fatalf("Wait after Free = %v, want ErrFreed", err)
	}
}

func TestPollWhich(t *testing.T) {
	qs := make([]*Queue, 3)
	for i := range qs {
		qs[i] = mustQueue(t, 2, 0)
	}
	tests := []struct {
		name      string
		post      []int // queue index of each post, event bits = 100*index + order
		wantWhich []int
	}{
		{"only last", []int{2}, []int{2}},
		{"only middle", []int{1}, []int{1}},
		{"lowest index first", []int{2, 0, 1}, []int{0, 1, 2}},
		{"two on one queue", []int{1, 1, 0}, []int{0, 1, 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for i, qi := range tc.post {
				if err := qs[qi].Post(ev(uint64(100*qi + i))); err != nil {
					t.Fatal(err)
				}
			}
			for _, w := range tc.wantWhich {
				e, which, err := Poll(expired(), qs)
				if err != nil || which != w || e.MatchBits/100 != uint64(w) {
					t.Fatalf("Poll = bits %d which %d err %v; want which %d", e.MatchBits, which, err, w)
				}
			}
			if _, which, err := Poll(expired(), qs); !errors.Is(err, ErrEQEmpty) || which != -1 {
				t.Fatalf("Poll on empty = %d, %v", which, err)
			}
		})
	}
	for _, q := range qs {
		must(t, q.Free())
	}
}

func TestPollBlocksThenReports(t *testing.T) {
	qs := []*Queue{mustQueue(t, 1, 0), mustQueue(t, 1, 0), mustQueue(t, 1, 0)}
	count := func() int {
		n := 0
		for _, q := range qs {
			q.mu.Lock()
			n += len(q.waiters)
			q.mu.Unlock()
		}
		return n
	}
	for _, target := range []int{2, 0, 1} {
		out := make(chan result)
		go func() {
			e, which, err := Poll(context.Background(), qs)
			out <- result{e, which, err}
		}()
		waitForWaiters(t, count, len(qs))
		if err := qs[target].Post(ev(uint64(target))); err != nil {
			t.Fatal(err)
		}
		r := <-out
		if r.err != nil || r.which != target || r.ev.MatchBits != uint64(target) {
			t.Fatalf("Poll = %+v, want which %d", r, target)
		}
		if n := count(); n != 0 {
			t.Fatalf("%d registrations left", n)
		}
	}
}

func TestPollInterruptedByFree(t *testing.T) {
	qs := []*Queue{mustQueue(t, 1, 0), mustQueue(t, 1, 0)}
	out := make(chan result)
	go func() {
		e, which, err := Poll(context.Background(), qs)
		out <- result{e, which, err}
	}()
	waitForWaiters(t, func() int { qs[1].mu.Lock(); defer qs[1].mu.Unlock(); return len(qs[1].waiters) }, 1)
	must(t, qs[1].Free())
	r := <-out
	if !errors.Is(r.err, ErrInterrupted) || r.which != 1 {
		t.Fatalf("Poll = which %d err %v, want 1 ErrInterrupted", r.which, r.err)
	}
	if _, which, err := Poll(expired(), qs); !errors.Is(err, ErrFreed) || which != 1 {
		t.Fatalf("Poll with a freed queue = %d %v, want 1 ErrFreed", which, err)
	}
}

func TestPollBadArgs(t *testing.T) {
	q := mustQueue(t, 1, 0)
	tests := []struct {
		name  string
		qs    []*Queue
		which int
	}{
		{"nil slice", nil, -1},
		{"empty", []*Queue{}, -1},
		{"nil queue", []*Queue{q, nil}, 1},
	}
	for _, tc := range tests {
		if _, which, err := Poll(context.Background(), tc.qs); !errors.Is(err, ErrInvalid) || which != tc.which {
			t.Errorf("%s: Poll = %d, %v; want %d, ErrInvalid", tc.name, which, err, tc.which)
		}
	}
}

func TestPollSameQueueTwice(t *testing.T) {
	q := mustQueue(t, 1, 0)
	qs := []*Queue{q, q}
	out := make(chan result)
	go func() {
		e, which, err := Poll(context.Background(), qs)
		out <- result{e, which, err}
	}()
	waitForWaiters(t, func() int { q.mu.Lock(); defer q.mu.Unlock(); return len(q.waiters) }, 2)
	must(t, q.Post(ev(3)))
	r := <-out
	if r.err != nil || r.which != 0 {
		t.Fatalf("Poll = %+v", r)
	}
	if len(q.waiters) != 0 {
		t.Fatalf("%d registrations left", len(q.waiters))
	}
}
