package soft

import (
	"sync"
	"testing"

	"github.com/goportals/goportals/internal/verbs"
)

func openCQ(tb testing.TB, entries int) *cq {
	tb.Helper()
	c, err := Open()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	q, err := c.CreateCQ(entries)
	if err != nil {
		tb.Fatal(err)
	}
	return q.(*cq)
}

// TestCQGrowsInOrder: a queue far smaller than what is pushed loses nothing and
// hands completions out in push order, across the ring and the overflow, whatever
// the poll batch size, and takes the ring again once the overflow drained.
func TestCQGrowsInOrder(t *testing.T) {
	q := openCQ(t, 4)
	next, want := uint64(0), uint64(0)
	var wc [7]verbs.WorkCompletion
	for round := 0; round < 50; round++ {
		for i := 0; i < 3+round%20; i++ {
			q.push(verbs.WorkCompletion{ID: next})
			next++
		}
		for batch := 1 + round%len(wc); ; {
			n, err := q.Poll(wc[:batch])
			if err != nil {
				t.Fatal(err)
			}
			if n == 0 {
				break
			}
			for _, w := range wc[:n] {
				if w.ID != want {
					t.Fatalf("round %d: polled completion %d, want %d", round, w.ID, want)
				}
				want++
			}
		}
		if want != next {
			t.Fatalf("round %d: polled %d of %d completions", round, want, next)
		}
		if q.nover.Load() != 0 || len(q.over) != 0 {
			t.Fatalf("round %d: overflow not empty after draining", round)
		}
	}
}

// TestCQConcurrentProducersKeepOrder: completions pushed by several goroutines
// into a small queue (so they go through the overflow too) all arrive, and the
// completions of each producer in the order it pushed them, with a waiter woken.
func TestCQConcurrentProducersKeepOrder(t *testing.T) {
	const producers, each = 4, 5000
	q := openCQ(t, 8)
	var wg sync.WaitGroup
	for p := 0; p < producers; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				q.push(verbs.WorkCompletion{ID: uint64(i), QPNum: uint32(p)})
			}
		}()
	}
	var seen [producers]uint64
	var wc [5]verbs.WorkCompletion
	for got := 0; got < producers*each; {
		n, err := q.Poll(wc[:])
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range wc[:n] {
			if w.ID != seen[w.QPNum] {
				t.Fatalf("producer %d: completion %d after %d", w.QPNum, w.ID, seen[w.QPNum])
			}
			seen[w.QPNum]++
		}
		got += n
	}
	wg.Wait()
	if n, _ := q.Poll(wc[:]); n != 0 {
		t.Fatalf("%d completions more than were pushed", n)
	}
}

// TestCQPollAllocatesNothing: polling an empty queue and taking a completion
// allocate nothing.
func TestCQPollAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates on its own")
	}
	q := openCQ(t, 64)
	var wc [4]verbs.WorkCompletion
	if n := testing.AllocsPerRun(1000, func() {
		q.push(verbs.WorkCompletion{ID: 1})
		if k, _ := q.Poll(wc[:]); k != 1 {
			t.Fatalf("polled %d", k)
		}
		q.Poll(wc[:])
	}); n != 0 {
		t.Errorf("push and poll allocate %v times", n)
	}
}

// BenchmarkCQPushPoll is one completion through the queue: a push, then a poll
// that takes it (with the context's progress round, which has nothing to do).
func BenchmarkCQPushPoll(b *testing.B) {
	q := openCQ(b, 64)
	var wc [4]verbs.WorkCompletion
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		q.push(verbs.WorkCompletion{ID: uint64(i)})
		q.Poll(wc[:])
	}
}
