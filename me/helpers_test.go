package me

import (
	"errors"
	"testing"
)

func newTestTable(t testing.TB, cfg Config) *Table {
	t.Helper()
	if cfg.MaxEntries == 0 {
		cfg.MaxEntries = 64
	}
	if cfg.MaxListSize == 0 {
		cfg.MaxListSize = 64
	}
	tb, err := NewTable(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

func mustAppend(t testing.TB, tb *Table, e Entry, l List) (Handle, []Event) {
	t.Helper()
	h, evs, err := tb.Append(e, l, nil)
	if err != nil {
		t.Fatalf("Append(%+v, %v): %v", e, l, err)
	}
	return h, evs
}

// mustState returns the state of h, failing the test if State fails.
func mustState(t testing.TB, tb *Table, h Handle) EntryState {
	t.Helper()
	st, err := tb.State(h)
	if err != nil {
		t.Fatalf("State(%v): %v", h, err)
	}
	return st
}

// mustSearch runs a search, failing the test if Search fails.
func mustSearch(t testing.TB, tb *Table, e Entry, op SearchOp) []Event {
	t.Helper()
	evs, err := tb.Search(e, op, nil)
	if err != nil {
		t.Fatalf("Search(%+v, %v): %v", e, op, err)
	}
	return evs
}

// kinds lists the kinds of evs, with a '-' prefix for events not posted.
func kinds(evs []Event) []string {
	var s []string
	for _, e := range evs {
		k := e.Kind.String()
		if !e.Post {
			k = "-" + k
		}
		s = append(s, k)
	}
	return s
}

func sameKinds(t testing.TB, what string, evs []Event, want ...string) {
	t.Helper()
	got := kinds(evs)
	if len(got) != len(want) {
		t.Fatalf("%s: events %v, want %v", what, got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%s: events %v, want %v", what, got, want)
		}
	}
}

func put(bits uint64, length uint64) Header {
	return Header{Op: OpKindPut, Initiator: ProcessID{NID: 1, PID: 2, Rank: 3}, UID: 7, MatchBits: bits, Length: length}
}

func isErr(t testing.TB, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("error %v, want %v", err, want)
	}
}

const rw = OpPut | OpGet

var anySrc = ProcessID{NID: NIDAny, PID: PIDAny, Rank: RankAny}
