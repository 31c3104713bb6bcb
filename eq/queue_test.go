package eq

import (
	"errors"
	"sync"
	"testing"
)

func mustQueue(t testing.TB, size, reserve int) *Queue {
	t.Helper()
	q, err := NewQueue(size, reserve)
	if err != nil {
		t.Fatalf("NewQueue(%d, %d): %v", size, reserve, err)
	}
	return q
}

func ev(n uint64) *Event { return &Event{Type: EventPut, MatchBits: n, UserPtr: n * 10} }

func TestNewQueueArgs(t *testing.T) {
	tests := []struct {
		size, reserve int
		ok            bool
	}{
		{1, 0, true},
		{10, 64, true},
		{MaxQueueSize, 0, true},
		{MaxQueueSize - 1, 1, true},
		{0, 0, false},
		{-1, 0, false},
		{1, -1, false},
		{MaxQueueSize + 1, 0, false},
		{MaxQueueSize, 1, false},
		{1, MaxQueueSize, false},
	}
	for _, tc := range tests {
		q, err := NewQueue(tc.size, tc.reserve)
		if tc.ok {
			if err != nil || q.Cap() != tc.size+tc.reserve || q.Avail() != tc.size {
				t.Errorf("NewQueue(%d, %d) = cap %v, err %v", tc.size, tc.reserve, q, err)
			}
			continue
		}
		if !errors.Is(err, ErrInvalid) || q != nil {
			t.Errorf("NewQueue(%d, %d) err = %v, want ErrInvalid", tc.size, tc.reserve, err)
		}
	}
}

func TestQueueFIFOAndFields(t *testing.T) {
	q := mustQueue(t, 4, 0)
	if _, err := q.Get(); !errors.Is(err, ErrEQEmpty) {
		t.Fatalf("Get on new queue: %v, want ErrEQEmpty", err)
	}
	full := Event{
		Start: 1, UserPtr: 2, HdrData: 3, MatchBits: 4, RLength: 5, MLength: 6, RemoteOffset: 7,
		Initiator: ProcessID{NID: 8, PID: 9, Rank: 10}, UID: 11, PTIndex: 12, Type: EventFetchAtomic,
		List: OverflowList, NIFail: NISegv, AtomicOp: OpCSwapLT, AtomicType: DoubleComplex,
	}
	if err := q.Post(&full); err != nil {
		t.Fatal(err)
	}
	// Posting copies: a later change of the caller's event must not show.
	full.MatchBits = 99
	got, err := q.Get()
	if err != nil {
		t.Fatal(err)
	}
	full.MatchBits = 4
	if got != full {
		t.Fatalf("Get = %+v, want %+v", got, full)
	}
	// Wrap around the ring several times without overflow.
	for round := uint64(0); round < 5; round++ {
		for i := uint64(0); i < 3; i++ {
			if err := q.Post(ev(round*10 + i)); err != nil {
				t.Fatal(err)
			}
		}
		for i := uint64(0); i < 3; i++ {
			e, err := q.Get()
			if err != nil || e.MatchBits != round*10+i {
				t.Fatalf("round %d: Get = %d, %v; want %d", round, e.MatchBits, err, round*10+i)
			}
		}
	}
	if q.Dropped() != 0 {
		t.Fatalf("Dropped = %d", q.Dropped())
	}
}

// TestQueueOverflow checks that a full ring overwrites its oldest events and that the
// consumer is told, with the first event after the gap and only that one.
func TestQueueOverflow(t *testing.T) {
	tests := []struct {
		name          string
		size, reserve int
		steps         []string // "p" post next, "g" get
		wantGets      []uint64 // match bits of each get, in order
		wantDrop      []bool   // whether each get reported ErrEQDropped
		wantDropped   uint64
	}{
		{"no overflow", 3, 0, []string{"p", "p", "p", "g", "g", "g"}, []uint64{0, 1, 2}, []bool{false, false, false}, 0},
		{"one over", 3, 0, []string{"p", "p", "p", "p", "g", "g", "g"}, []uint64{1, 2, 3}, []bool{true, false, false}, 1},
		{"many over", 2, 0, []string{"p", "p", "p", "p", "p", "g", "g"}, []uint64{3, 4}, []bool{true, false}, 3},
		{"reserve counts as room", 2, 1, []string{"p", "p", "p", "g", "g", "g"}, []uint64{0, 1, 2}, []bool{false, false, false}, 0},
		{"gap after partial drain", 2, 0, []string{"p", "p", "g", "p", "p", "g", "g"}, []uint64{0, 2, 3}, []bool{false, true, false}, 1},
		{"gap reported once then clean", 1, 0, []string{"p", "p", "g", "p", "g"}, []uint64{1, 2}, []bool{true, false}, 1},
		{"size one, no drop", 1, 0, []string{"p", "g", "p", "g"}, []uint64{0, 1}, []bool{false, false}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q := mustQueue(t, tc.size, tc.reserve)
			var next uint64
			var gets []uint64
			var drops []bool
			for _, s := range tc.steps {
				switch s {
				case "p":
					if err := q.Post(ev(next)); err != nil {
						t.Fatal(err)
					}
					next++
				case "g":
					e, err := q.Get()
					if err != nil && !errors.Is(err, ErrEQDropped) {
						t.Fatalf("Get: %v", err)
					}
					gets = append(gets, e.MatchBits)
					drops = append(drops, errors.Is(err, ErrEQDropped))
				}
			}
			if len(gets) != len(tc.wantGets) {
				t.Fatalf("gets = %v, want %v", gets, tc.wantGets)
			}
			for i := range gets {
				if gets[i] != tc.wantGets[i] || drops[i] != tc.wantDrop[i] {
					t.Fatalf("gets = %v drops %v, want %v drops %v", gets, drops, tc.wantGets, tc.wantDrop)
				}
			}
			if q.Dropped() != tc.wantDropped {
				t.Fatalf("Dropped = %d, want %d", q.Dropped(), tc.wantDropped)
			}
			if _, err := q.Get(); !errors.Is(err, ErrEQEmpty) {
				t.Fatalf("final Get: %v, want ErrEQEmpty", err)
			}
		})
	}
}

func TestQueueAvail(t *testing.T) {
	q := mustQueue(t, 2, 2)
	want := []int{2, 1, 0, 0, 0}
	for i, w := range want {
		if got := q.Avail(); got != w {
			t.Fatalf("after %d posts Avail = %d, want %d", i, got, w)
		}
		if got := q.Len(); got != i && i <= 4 {
			t.Fatalf("Len = %d, want %d", got, i)
		}
		if i < 4 {
			if err := q.Post(ev(uint64(i))); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The reserved slots took two events without a drop.
	if q.Dropped() != 0 || q.Len() != 4 {
		t.Fatalf("Dropped %d Len %d", q.Dropped(), q.Len())
	}
}

func TestQueueFreeAndBadInput(t *testing.T) {
	q := mustQueue(t, 2, 0)
	if err := q.Post(nil); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Post(nil) = %v, want ErrInvalid", err)
	}
	if q.Len() != 0 {
		t.Fatal("Post(nil) changed the queue")
	}
	if err := q.Post(ev(1)); err != nil {
		t.Fatal(err)
	}
	if err := q.Free(); err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name string
		err  error
	}{
		{"Free again", q.Free()},
		{"Post", q.Post(ev(2))},
		{"Get", func() error { _, err := q.Get(); return err }()},
	}
	for _, c := range checks {
		if !errors.Is(c.err, ErrFreed) {
			t.Errorf("%s after Free = %v, want ErrFreed", c.name, c.err)
		}
	}
	if q.Len() != 0 || q.Avail() != 0 {
		t.Errorf("freed queue Len %d Avail %d", q.Len(), q.Avail())
	}
}

// TestQueueConcurrentProducers posts from several goroutines while one consumer gets:
// with room for everything, every event arrives exactly once and each producer's events
// arrive in its order.
func TestQueueConcurrentProducers(t *testing.T) {
	const producers, per = 4, 2000
	q := mustQueue(t, producers*per, 0)
	var wg sync.WaitGroup
	for p := 0; p < producers; p++ {
		wg.Add(1)
		go func(p int) {
			defer wg.Done()
			for i := 0; i < per; i++ {
				if err := q.Post(&Event{Initiator: ProcessID{Rank: Rank(p)}, MatchBits: uint64(i)}); err != nil {
					t.Error(err)
					return
				}
			}
		}(p)
	}
	last := make([]int64, producers)
	for i := range last {
		last[i] = -1
	}
	got := 0
	for got < producers*per {
		e, err := q.Get()
		if errors.Is(err, ErrEQEmpty) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		r := e.Initiator.Rank
		if int64(e.MatchBits) != last[r]+1 {
			t.Fatalf("producer %d: got %d after %d", r, e.MatchBits, last[r])
		}
		last[r] = int64(e.MatchBits)
		got++
	}
	wg.Wait()
	if q.Dropped() != 0 {
		t.Fatalf("dropped %d", q.Dropped())
	}
}

// TestQueueConcurrentOverflow races producers against a slow consumer on a small ring:
// posting never blocks, and received + dropped = posted.
func TestQueueConcurrentOverflow(t *testing.T) {
	const producers, per = 4, 3000
	q := mustQueue(t, 8, 0)
	var wg sync.WaitGroup
	for p := 0; p < producers; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < per; i++ {
				if err := q.Post(ev(uint64(i))); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	received, gaps := 0, 0
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	drain := func() {
		for {
			_, err := q.Get()
			if errors.Is(err, ErrEQEmpty) {
				return
			}
			if errors.Is(err, ErrEQDropped) {
				gaps++
			} else if err != nil {
				t.Error(err)
				return
			}
			received++
		}
	}
loop:
	for {
		select {
		case <-done:
			break loop
		default:
			drain()
		}
	}
	drain()
	if uint64(received)+q.Dropped() != producers*per {
		t.Fatalf("received %d + dropped %d != posted %d", received, q.Dropped(), producers*per)
	}
	if q.Dropped() > 0 && gaps == 0 {
		t.Fatal("events were dropped but no Get reported ErrEQDropped")
	}
}
