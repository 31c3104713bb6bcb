package eq

import (
	"context"
	"testing"
)

// BenchmarkEQPostGet posts one event and gets it back.
func BenchmarkEQPostGet(b *testing.B) {
	q := mustQueue(b, 1024, 0)
	e := Event{Type: EventPut, MatchBits: 1, MLength: 8}
	b.ReportAllocs()
	for b.Loop() {
		_ = q.Post(&e)
		if _, err := q.Get(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEQPostGetParallel has producers and consumers on all CPUs share one queue.
func BenchmarkEQPostGetParallel(b *testing.B) {
	q := mustQueue(b, 1<<16, 0)
	e := Event{Type: EventPut, MatchBits: 1, MLength: 8}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			_ = q.Post(&e)
			_, _ = q.Get()
		}
	})
}

// BenchmarkEQPoll4 polls four queues of which the last holds the event.
func BenchmarkEQPoll4(b *testing.B) {
	qs := []*Queue{mustQueue(b, 64, 0), mustQueue(b, 64, 0), mustQueue(b, 64, 0), mustQueue(b, 64, 0)}
	e := Event{Type: EventPut}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		_ = qs[3].Post(&e)
		if _, which, err := Poll(ctx, qs); err != nil || which != 3 {
			b.Fatal(which, err)
		}
	}
}

// BenchmarkCTInc increments a counter with no waiters and no triggers.
func BenchmarkCTInc(b *testing.B) {
	c := NewCounter()
	b.ReportAllocs()
	for b.Loop() {
		_ = c.Inc(CTEvent{Success: 1})
	}
}

// BenchmarkCTIncPending increments a counter that has 1000 triggers pending far ahead:
// the heap keeps the check O(1).
func BenchmarkCTIncPending(b *testing.B) {
	c := NewCounter()
	for i := 0; i < 1000; i++ {
		_ = c.AddTrigger(1<<62+uint64(i), nopTrigger{})
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = c.Inc(CTEvent{Success: 1})
	}
}

// BenchmarkTriggerFire registers one trigger at the next value and increments to fire
// it, with 1000 other triggers pending further ahead.
func BenchmarkTriggerFire(b *testing.B) {
	c := NewCounter()
	for i := 0; i < 1000; i++ {
		_ = c.AddTrigger(1<<62+uint64(i), nopTrigger{})
	}
	var next uint64
	b.ReportAllocs()
	for b.Loop() {
		next++
		_ = c.AddTrigger(next, nopTrigger{})
		_ = c.Inc(CTEvent{Success: 1})
	}
	if c.PendingTriggers() != 1000 {
		b.Fatalf("%d pending", c.PendingTriggers())
	}
}
