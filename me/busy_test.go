package me

import (
	"errors"
	"testing"
)

// A header whose data is still arriving cannot be claimed: Append and Search fail with
// ErrBusy and change nothing; once the engine marks the transfer complete they claim it.
func TestBusyHeaderWaitsForData(t *testing.T) {
	tb := newTestTable(t, Config{Matching: true, MaxUnexpectedHeaders: 8})
	mustAppend(t, tb, Entry{Length: 64, UID: UIDAny, Options: rw | UseOnce, MatchID: anySrc, MatchBits: 1, UserPtr: 9}, ListOverflow)
	mustAppend(t, tb, Entry{Length: 64, UID: UIDAny, Options: rw, MatchID: anySrc, MatchBits: 2, UserPtr: 10}, ListOverflow)
	h1 := put(1, 32)
	res, _ := tb.Match(&h1, nil)
	if !res.HeaderKept {
		t.Fatalf("header not kept: %+v", res)
	}
	tb.SetBusy(res.Unexpected, true)
	h2 := put(2, 8)
	if res2, _ := tb.Match(&h2, nil); !res2.HeaderKept {
		t.Fatalf("second header not kept: %+v", res2)
	}

	claimer := Entry{Length: 64, UID: UIDAny, Options: rw | UseOnce, MatchID: anySrc, MatchBits: 1, UserPtr: 20}
	if _, _, err := tb.Append(claimer, ListPriority, nil); !errors.Is(err, ErrBusy) {
		t.Fatalf("append over a busy header: %v, want ErrBusy", err)
	}
	for _, op := range []SearchOp{SearchOnly, SearchDelete} {
		if _, err := tb.Search(claimer, op, nil); !errors.Is(err, ErrBusy) {
			t.Fatalf("%v over a busy header: %v, want ErrBusy", op, err)
		}
	}
	if tb.UnexpectedLen() != 2 || tb.Len(ListPriority) != 0 {
		t.Fatalf("a refused claim changed the table: %d headers, %d linked", tb.UnexpectedLen(), tb.Len(ListPriority))
	}
	// An entry that claims only the complete header is not held up by the busy one.
	other := Entry{Length: 64, UID: UIDAny, Options: rw | UseOnce, MatchID: anySrc, MatchBits: 2, UserPtr: 21}
	if _, evs, err := tb.Append(other, ListPriority, nil); err != nil {
		t.Fatal(err)
	} else {
		sameKinds(t, "claim of the complete header", evs, "PUT_OVERFLOW", "AUTO_UNLINK")
	}

	tb.SetBusy(res.Unexpected, false)
	_, evs, err := tb.Append(claimer, ListPriority, nil)
	if err != nil {
		t.Fatal(err)
	}
	sameKinds(t, "claim after the data arrived", evs, "PUT_OVERFLOW", "AUTO_FREE", "AUTO_UNLINK")
}
