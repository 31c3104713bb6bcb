package soft

import (
	"testing"

	"github.com/goportals/goportals/internal/verbs"
)

// TestCQOverflowWaitsForClaimedSlot: a push that claimed the oldest ring slot and
// has not published it yet (a goroutine preempted between its compare-and-swap
// and its store) must not let a poll hand out the overflow before the ring: the
// ring behind that slot holds older completions of other producers, whose newer
// ones went to the overflow. Here producer 1 fills the ring behind a slot that
// producer 2 claimed, its next completion overflows, and a poll must give
// producer 1's completions in order.
func TestCQOverflowWaitsForClaimedSlot(t *testing.T) {
	q := openCQ(t, 4)
	// Producer 2 claims position 0 (as tryPush does) and stalls before publishing.
	pos := q.pushPos.Load()
	if !q.pushPos.CompareAndSwap(pos, pos+1) {
		t.Fatal("claim failed")
	}
	// Producer 1 fills the other three slots, then overflows.
	for i := uint64(0); i < 4; i++ {
		q.push(verbs.WorkCompletion{ID: i, QPNum: 1})
	}
	if q.nover.Load() == 0 {
		t.Fatal("the fourth completion did not overflow: the test does not set up its case")
	}
	var wc [8]verbs.WorkCompletion
	var got []verbs.WorkCompletion
	n, err := q.Poll(wc[:])
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, wc[:n]...)
	// Producer 2 publishes its slot now, as the stalled goroutine would.
	s := &q.slots[pos&q.mask]
	s.wc = verbs.WorkCompletion{ID: 0, QPNum: 2}
	s.seq.Store(pos + 1)
	for {
		n, err := q.Poll(wc[:])
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		got = append(got, wc[:n]...)
	}
	var next uint64
	for _, w := range got {
		if w.QPNum != 1 {
			continue
		}
		if w.ID != next {
			t.Fatalf("producer 1: completion %d polled when %d was next (polled %v)", w.ID, next, ids(got))
		}
		next++
	}
	if next != 4 || len(got) != 5 {
		t.Fatalf("polled %v, want 5 completions (4 of producer 1)", ids(got))
	}
}

func ids(wcs []verbs.WorkCompletion) []uint64 {
	r := make([]uint64, len(wcs))
	for i, w := range wcs {
		r[i] = uint64(w.QPNum)<<32 | w.ID
	}
	return r
}
