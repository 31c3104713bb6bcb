package me

import (
	"sync"
	"testing"
	"unsafe"
)

func TestNewTableErrors(t *testing.T) {
	for _, cfg := range []Config{
		{MaxEntries: 0, MaxListSize: 1},
		{MaxEntries: -1, MaxListSize: 1},
		{MaxEntries: 1, MaxListSize: 0},
		{MaxEntries: 1, MaxListSize: 1, MaxUnexpectedHeaders: -1},
		{MaxEntries: 1, MaxListSize: 1, Addressing: 7},
	} {
		_, err := NewTable(cfg)
		isErr(t, err, ErrInvalidConfig)
	}
}

func TestAppendErrors(t *testing.T) {
	tb := newTestTable(t, Config{Matching: true, MaxEntries: 3, MaxListSize: 2})
	e := Entry{Length: 8, UID: UIDAny, Options: rw, MatchID: anySrc}
	_, evs, err := tb.Append(e, List(2), nil)
	isErr(t, err, ErrInvalidList)
	if len(evs) != 0 {
		t.Fatal("events on error")
	}
	bad := e
	bad.Options |= 1 << 31
	_, _, err = tb.Append(bad, ListPriority, nil)
	isErr(t, err, ErrInvalidOption)
	mustAppend(t, tb, e, ListPriority)
	mustAppend(t, tb, e, ListPriority)
	_, _, err = tb.Append(e, ListPriority, nil)
	isErr(t, err, ErrListTooLong)
	h3, _ := mustAppend(t, tb, e, ListOverflow)
	_, _, err = tb.Append(e, ListOverflow, nil)
	isErr(t, err, ErrNoSpace)
	if tb.Entries() != 3 || tb.Len(ListPriority) != 2 || tb.Len(ListOverflow) != 1 {
		t.Fatal("failed appends changed the table")
	}
	if err := tb.Unlink(h3); err != nil {
		t.Fatal(err)
	}
	isErr(t, tb.Unlink(h3), ErrUnknownHandle)
	isErr(t, tb.Unlink(0), ErrUnknownHandle)
	isErr(t, tb.Unlink(Handle(1<<40|99)), ErrUnknownHandle)
	// The freed slot is reused; the old handle stays stale.
	h4, _ := mustAppend(t, tb, e, ListOverflow)
	if h4 == h3 {
		t.Fatal("handle reused")
	}
	isErr(t, tb.Unlink(h3), ErrUnknownHandle)
	if _, err := tb.State(h4); err != nil {
		t.Fatal(err)
	}
}

func TestStateRecordsOptions(t *testing.T) {
	tb := newTestTable(t, Config{Matching: true})
	e := Entry{Length: 8, UID: 3, Options: rw | IsAccessible | MayAlign | ManageLocal, MatchID: anySrc, MatchBits: 9, UserPtr: 4}
	h, _ := mustAppend(t, tb, e, ListOverflow)
	st, err := tb.State(h)
	if err != nil || st.Entry != e || st.List != ListOverflow || !st.Linked {
		t.Fatalf("%+v %v", st, err)
	}
}

func TestListEntries(t *testing.T) {
	tb := newTestTable(t, Config{Matching: false, MaxUnexpectedHeaders: 4})
	for _, o := range []Options{ManageLocal, NoTruncate, MayAlign} {
		_, _, err := tb.Append(Entry{Options: rw | o}, ListPriority, nil)
		isErr(t, err, ErrInvalidOption)
	}
	// Match criteria are not read: the first entry takes every message.
	first, _ := mustAppend(t, tb, Entry{Length: 8, UID: UIDAny, Options: rw | UseOnce, MatchBits: 1, MatchID: ProcessID{NID: 50, PID: 50}, UserPtr: 1}, ListPriority)
	mustAppend(t, tb, Entry{Length: 8, UID: 99, Options: rw, UserPtr: 2}, ListPriority)
	mustAppend(t, tb, Entry{Length: 100, UID: UIDAny, Options: rw, UserPtr: 3}, ListOverflow)
	h := put(12345, 20)
	h.RemoteOffset = 2
	res, evs := tb.Match(&h, nil)
	if res.Handle != first || res.LocalOffset != 2 || res.MLength != 6 {
		t.Fatalf("%+v", res)
	}
	sameKinds(t, "first LE", evs, "AUTO_UNLINK", "PUT")
	// The next one refuses by uid: the message is dropped, not passed to the overflow list.
	if res, _ := tb.Match(&h, nil); res.Outcome != OutcomePermViolation || res.UserPtr != 2 {
		t.Fatalf("%+v", res)
	}
	// Overflow list entries keep headers; a priority LE claims every header.
	tb2 := newTestTable(t, Config{Matching: false, MaxUnexpectedHeaders: 4})
	mustAppend(t, tb2, Entry{Length: 100, UID: UIDAny, Options: rw, UserPtr: 3}, ListOverflow)
	for i := 0; i < 3; i++ {
		h := put(uint64(i), 5)
		tb2.Match(&h, nil)
	}
	evs = mustSearch(t, tb2, Entry{UID: UIDAny, Options: rw | UseOnce}, SearchOnly)
	sameKinds(t, "LE probe", evs, "SEARCH")
	_, evs = mustAppend(t, tb2, Entry{Length: 8, UID: UIDAny, Options: rw}, ListPriority)
	sameKinds(t, "LE append", evs, "PUT_OVERFLOW", "PUT_OVERFLOW", "PUT_OVERFLOW", "LINK")
}

// TestMatchAllocs: the match fast path, and the re-append of a use-once entry, allocate
// nothing once the table has reached its working size.
func TestMatchAllocs(t *testing.T) {
	for _, ignore := range []uint64{0, 0xff} {
		tb := newTestTable(t, Config{Matching: true, MaxEntries: 4096, MaxListSize: 4096, MaxUnexpectedHeaders: 64})
		for i := uint64(0); i < 1000; i++ {
			mustAppend(t, tb, Entry{Length: 64, UID: UIDAny, Options: rw, MatchID: anySrc, MatchBits: i << 8, IgnoreBits: ignore}, ListPriority)
		}
		once := Entry{Length: 64, UID: UIDAny, Options: rw | UseOnce, MatchID: anySrc, MatchBits: 1 << 40, IgnoreBits: ignore}
		mustAppend(t, tb, once, ListPriority)
		out := make([]Event, 0, 8)
		h := put(1<<40, 8)
		hp := put(500<<8, 8)
		var err error
		allocs := testing.AllocsPerRun(1000, func() {
			var res MatchResult
			res, out = tb.Match(&h, out[:0])
			if res.Outcome != OutcomeMatched {
				t.Fatal(res.Outcome)
			}
			_, out, err = tb.Append(once, ListPriority, out[:0])
			if err != nil {
				t.Fatal(err)
			}
			res, out = tb.Match(&hp, out[:0])
			if res.Outcome != OutcomeMatched {
				t.Fatal(res.Outcome)
			}
		})
		if allocs != 0 {
			t.Fatalf("ignore %#x: %v allocations per match+append", ignore, allocs)
		}
	}
	// Overflow delivery and claiming, in steady state.
	tb := newTestTable(t, Config{Matching: true, MaxUnexpectedHeaders: 4})
	mustAppend(t, tb, overflowEntry(1, 0), ListOverflow)
	claim := Entry{Length: 8, UID: UIDAny, Options: rw | UseOnce, MatchID: anySrc, MatchBits: 6}
	out := make([]Event, 0, 8)
	h := put(6, 1)
	var failed error
	allocs := testing.AllocsPerRun(1000, func() {
		_, out = tb.Match(&h, out[:0])
		var err error
		if _, out, err = tb.Append(claim, ListPriority, out[:0]); err != nil && failed == nil {
			failed = err
		}
	})
	if failed != nil {
		t.Fatalf("the measured claim failed: %v", failed)
	}
	if allocs != 0 || tb.UnexpectedLen() != 0 {
		t.Fatalf("%v allocations per overflow delivery and claim", allocs)
	}
}

// TestTablesIndependent: distinct tables share no state and may be used concurrently
// (run with -race).
func TestTablesIndependent(t *testing.T) {
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			tb, err := NewTable(Config{Matching: true, MaxEntries: 128, MaxListSize: 128, MaxUnexpectedHeaders: 16})
			if err != nil {
				t.Error(err)
				return
			}
			var out []Event
			for i := 0; i < 2000; i++ {
				e := Entry{Length: 8, UID: UIDAny, Options: rw | UseOnce, MatchID: anySrc, MatchBits: uint64(i % 7)}
				if _, out, err = tb.Append(e, ListPriority, out[:0]); err != nil {
					t.Error(err)
					return
				}
				h := put(uint64(i%7), 8)
				if res, _ := tb.Match(&h, out[:0]); res.Outcome != OutcomeMatched {
					t.Errorf("goroutine %d: %v", g, res.Outcome)
					return
				}
			}
		}(g)
	}
	wg.Wait()
}

// TestEntryLayout pins the arena record to two cache lines, with the scan fields first.
func TestEntryLayout(t *testing.T) {
	var e entry
	if s := unsafe.Sizeof(e); s != 128 {
		t.Fatalf("entry is %d bytes, want 128", s)
	}
	if o := unsafe.Offsetof(e.next); o >= 64 {
		t.Fatalf("entry.next at offset %d, want within the first cache line", o)
	}
}
