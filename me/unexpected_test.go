package me

import (
	"testing"
)

func overflowEntry(userPtr uint64, opts Options) Entry {
	return Entry{Length: 64, UID: UIDAny, Options: rw | opts | ManageLocal, MatchID: anySrc, IgnoreBits: ^uint64(0), UserPtr: userPtr}
}

func TestOverflowRecordsUnexpectedHeader(t *testing.T) {
	tb := newTestTable(t, Config{Matching: true, MaxUnexpectedHeaders: 8})
	ov, _ := mustAppend(t, tb, overflowEntry(100, 0), ListOverflow)
	for i, bits := range []uint64{1, 2, 1} {
		h := put(bits, 10)
		h.Cookie = uint64(i)
		res, evs := tb.Match(&h, nil)
		if res.Outcome != OutcomeMatched || res.List != ListOverflow || !res.HeaderKept || res.LocalOffset != uint64(10*i) {
			t.Fatalf("overflow match %d: %+v", i, res)
		}
		sameKinds(t, "overflow delivery", evs, "PUT")
		if evs[0].List != ListOverflow || evs[0].UserPtr != 100 {
			t.Fatalf("event %+v", evs[0])
		}
	}
	if st := mustState(t, tb, ov); st.PendingHeaders != 3 {
		t.Fatalf("pending %d", st.PendingHeaders)
	}
	ux := tb.Unexpected(nil)
	if len(ux) != 3 || ux[0].Header.Cookie != 0 || ux[2].Header.Cookie != 2 || ux[2].LocalOffset != 20 || ux[2].DataHandle != ov {
		t.Fatalf("unexpected list %+v", ux)
	}
	isErr(t, tb.Unlink(ov), ErrInUse)

	// A persistent priority entry for bits 1 claims both bits-1 headers, in arrival order,
	// then links. The data stays where the overflow entry put it.
	pe, evs := mustAppend(t, tb, Entry{Length: 8, UID: UIDAny, Options: rw | EventCTOverflow | EventCTBytes, MatchID: anySrc, MatchBits: 1, UserPtr: 200}, ListPriority)
	sameKinds(t, "persistent append", evs, "PUT_OVERFLOW", "PUT_OVERFLOW", "LINK")
	for i, want := range []struct{ cookie, off uint64 }{{0, 0}, {2, 20}} {
		e := evs[i]
		if e.Handle != pe || e.UserPtr != 200 || e.DataHandle != ov || e.DataUserPtr != 100 ||
			e.Header.Cookie != want.cookie || e.LocalOffset != want.off || e.MLength != 10 ||
			e.List != ListOverflow || !e.CT || e.CTInc != 10 {
			t.Fatalf("overflow event %d: %+v", i, e)
		}
	}
	if tb.UnexpectedLen() != 1 {
		t.Fatalf("%d headers left", tb.UnexpectedLen())
	}
	// Claiming does not consume the priority entry's own space.
	if st := mustState(t, tb, pe); st.LocalOffset != 0 || !st.Linked {
		t.Fatalf("priority entry %+v", st)
	}
	// A use-once entry claims one header and is never linked.
	uo, evs := mustAppend(t, tb, Entry{Length: 8, UID: UIDAny, Options: rw | UseOnce | EventOverDisable, MatchID: anySrc, MatchBits: 2, UserPtr: 300}, ListPriority)
	sameKinds(t, "use-once append", evs, "-PUT_OVERFLOW", "AUTO_UNLINK")
	if evs[0].CT {
		t.Fatal("overflow counted without EventCTOverflow")
	}
	if tb.Len(ListPriority) != 1 || tb.UnexpectedLen() != 0 {
		t.Fatalf("lists %d, headers %d", tb.Len(ListPriority), tb.UnexpectedLen())
	}
	isErr(t, tb.Unlink(uo), ErrUnknownHandle)
	if err := tb.Unlink(ov); err != nil {
		t.Fatal(err)
	}
}

func TestUseOnceAppendClaimsFirstOnly(t *testing.T) {
	tb := newTestTable(t, Config{Matching: true, MaxUnexpectedHeaders: 8})
	mustAppend(t, tb, overflowEntry(1, 0), ListOverflow)
	for i := 0; i < 3; i++ {
		h := put(5, 1)
		h.Cookie = uint64(i)
		tb.Match(&h, nil)
	}
	_, evs := mustAppend(t, tb, Entry{Length: 8, UID: UIDAny, Options: rw | UseOnce | EventUnlinkDisable, MatchID: anySrc, MatchBits: 5}, ListPriority)
	sameKinds(t, "use-once append", evs, "PUT_OVERFLOW", "-AUTO_UNLINK")
	if evs[0].Header.Cookie != 0 || tb.UnexpectedLen() != 2 {
		t.Fatalf("claimed %+v, %d left", evs[0].Header, tb.UnexpectedLen())
	}
}

func TestAppendClaimsByMatchCriteria(t *testing.T) {
	tb := newTestTable(t, Config{Matching: true, MaxUnexpectedHeaders: 8})
	mustAppend(t, tb, overflowEntry(1, 0), ListOverflow)
	hs := []Header{put(1, 4), put(2, 4), put(1, 40)}
	hs[1].Initiator.PID = 9
	for i := range hs {
		hs[i].Cookie = uint64(i)
		tb.Match(&hs[i], nil)
	}
	// No-truncate, 8 bytes, bits 1 from PID 2: claims only header 0 (header 2 is too long).
	_, evs := mustAppend(t, tb, Entry{Length: 8, UID: 12345, Options: NoTruncate, MatchID: ProcessID{NID: NIDAny, PID: 2}, MatchBits: 1}, ListPriority)
	sameKinds(t, "append", evs, "PUT_OVERFLOW", "LINK")
	if evs[0].Header.Cookie != 0 {
		t.Fatalf("claimed %+v", evs[0].Header)
	}
	// Permissions are not checked when claiming (uid 12345, no OpPut): as the reference.
	if tb.UnexpectedLen() != 2 {
		t.Fatalf("%d headers left", tb.UnexpectedLen())
	}
}

func TestUnexpectedHdrDisable(t *testing.T) {
	tb := newTestTable(t, Config{Matching: true, MaxUnexpectedHeaders: 0})
	mustAppend(t, tb, overflowEntry(1, UnexpectedHdrDisable), ListOverflow)
	h := put(1, 4)
	res, evs := tb.Match(&h, nil)
	if res.Outcome != OutcomeMatched || res.HeaderKept || tb.UnexpectedLen() != 0 {
		t.Fatalf("result %+v, %d headers", res, tb.UnexpectedLen())
	}
	sameKinds(t, "header-disabled delivery", evs, "PUT")
}

func TestUnexpectedFull(t *testing.T) {
	for _, opts := range []Options{0, EventFlowCtrlDisable} {
		tb := newTestTable(t, Config{Matching: true, MaxUnexpectedHeaders: 1})
		ov, _ := mustAppend(t, tb, overflowEntry(1, opts|UseOnce), ListOverflow)
		mustAppend(t, tb, overflowEntry(2, opts), ListOverflow)
		h := put(1, 4)
		if res, _ := tb.Match(&h, nil); res.Outcome != OutcomeMatched {
			t.Fatal(res.Outcome)
		}
		h2 := put(1, 4)
		h2.Cookie = 77
		res, evs := tb.Match(&h2, nil)
		if res.Outcome != OutcomeUnexpectedFull || res.UserPtr != 2 {
			t.Fatalf("%+v", res)
		}
		if opts == 0 {
			sameKinds(t, "full", evs, "PT_DISABLED")
		} else {
			sameKinds(t, "full", evs, "-PT_DISABLED")
		}
		if evs[0].Fail != FailPTDisabled || evs[0].Header.Cookie != 77 {
			t.Fatalf("event %+v", evs[0])
		}
		if tb.UnexpectedLen() != 1 || tb.Len(ListOverflow) != 1 {
			t.Fatalf("state changed: %d headers, %d overflow", tb.UnexpectedLen(), tb.Len(ListOverflow))
		}
		if st, err := tb.State(ov); err != nil || st.Linked || st.PendingHeaders != 1 {
			t.Fatalf("use-once overflow entry: %+v %v", st, err)
		}
	}
}

func TestAutoFree(t *testing.T) {
	t.Run("after last header claimed", func(t *testing.T) {
		tb := newTestTable(t, Config{Matching: true, MaxUnexpectedHeaders: 8})
		ov, _ := mustAppend(t, tb, Entry{Length: 16, MinFree: 8, UID: UIDAny, Options: rw | ManageLocal, MatchID: anySrc, IgnoreBits: ^uint64(0), UserPtr: 1}, ListOverflow)
		h := put(3, 6)
		_, evs := tb.Match(&h, nil)
		sameKinds(t, "first", evs, "PUT")
		h.MatchBits = 4
		res, evs := tb.Match(&h, nil)
		sameKinds(t, "min_free", evs, "AUTO_UNLINK", "PUT") // 4 left < 8
		if !res.Unlinked || tb.Len(ListOverflow) != 0 || tb.Entries() != 1 {
			t.Fatalf("%+v, %d linked, %d held", res, tb.Len(ListOverflow), tb.Entries())
		}
		isErr(t, tb.Unlink(ov), ErrInUse)
		_, evs = mustAppend(t, tb, Entry{Length: 8, UID: UIDAny, Options: rw, MatchID: anySrc, MatchBits: 3}, ListPriority)
		sameKinds(t, "claim first", evs, "PUT_OVERFLOW", "LINK")
		evs, err := tb.Search(Entry{UID: UIDAny, Options: rw, MatchID: anySrc, MatchBits: 4}, SearchDelete, nil)
		if err != nil {
			t.Fatal(err)
		}
		sameKinds(t, "claim last", evs, "PUT_OVERFLOW", "AUTO_FREE")
		if evs[1].Handle != ov || evs[1].UserPtr != 1 || tb.Entries() != 1 {
			t.Fatalf("auto free %+v, %d held", evs[1], tb.Entries())
		}
		isErr(t, tb.Unlink(ov), ErrUnknownHandle)
	})
	t.Run("at once without headers", func(t *testing.T) {
		tb := newTestTable(t, Config{Matching: true})
		mustAppend(t, tb, overflowEntry(1, UseOnce|UnexpectedHdrDisable), ListOverflow)
		h := put(1, 4)
		_, evs := tb.Match(&h, nil)
		sameKinds(t, "use-once header-disabled", evs, "AUTO_UNLINK", "PUT", "AUTO_FREE")
		if tb.Entries() != 0 {
			t.Fatal("entry still held")
		}
	})
	t.Run("unlink events disabled", func(t *testing.T) {
		tb := newTestTable(t, Config{Matching: true, MaxUnexpectedHeaders: 2})
		mustAppend(t, tb, overflowEntry(1, UseOnce|EventUnlinkDisable), ListOverflow)
		h := put(1, 4)
		_, evs := tb.Match(&h, nil)
		sameKinds(t, "match", evs, "-AUTO_UNLINK", "PUT")
		evs = mustSearch(t, tb, Entry{UID: UIDAny, Options: rw, MatchID: anySrc, IgnoreBits: ^uint64(0)}, SearchDelete)
		sameKinds(t, "delete", evs, "PUT_OVERFLOW", "-AUTO_FREE")
	})
}

func TestSearch(t *testing.T) {
	setup := func(t *testing.T) *Table {
		tb := newTestTable(t, Config{Matching: true, MaxUnexpectedHeaders: 8})
		mustAppend(t, tb, overflowEntry(1, 0), ListOverflow)
		for i, op := range []Op{OpKindPut, OpKindGet, OpKindAtomic, OpKindSwap} {
			h := put(uint64(i%2), 4)
			h.Op, h.Cookie = op, uint64(i)
			if res, _ := tb.Match(&h, nil); !res.HeaderKept {
				t.Fatal("header not kept")
			}
		}
		return tb
	}
	probe := func(bits uint64, opts Options) Entry {
		return Entry{UID: UIDAny, Options: opts, MatchID: anySrc, MatchBits: bits, UserPtr: 55}
	}
	t.Run("only", func(t *testing.T) {
		tb := setup(t)
		evs, err := tb.Search(probe(1, 0), SearchOnly, nil)
		if err != nil {
			t.Fatal(err)
		}
		sameKinds(t, "search only", evs, "SEARCH", "SEARCH")
		if evs[0].Header.Cookie != 1 || evs[1].Header.Cookie != 3 || evs[0].UserPtr != 55 || evs[0].Fail != FailNone || evs[0].Handle != 0 || evs[0].DataUserPtr != 1 {
			t.Fatalf("%+v", evs)
		}
		if tb.UnexpectedLen() != 4 {
			t.Fatal("search only removed headers")
		}
		evs = mustSearch(t, tb, probe(1, UseOnce|EventCommDisable), SearchOnly)
		sameKinds(t, "use-once probe", evs, "-SEARCH")
	})
	t.Run("delete", func(t *testing.T) {
		tb := setup(t)
		evs := mustSearch(t, tb, probe(0, rw|EventCTOverflow), SearchDelete)
		sameKinds(t, "delete", evs, "PUT_OVERFLOW", "ATOMIC_OVERFLOW")
		if evs[0].CT {
			t.Fatal("search counted")
		}
		evs = mustSearch(t, tb, probe(1, rw|UseOnce|EventOverDisable), SearchDelete)
		sameKinds(t, "use-once delete", evs, "-GET_OVERFLOW")
		// Permissions are not checked against unexpected headers: an entry that
		// could not take the swap as a message still claims its header.
		evs = mustSearch(t, tb, probe(1, OpPut), SearchDelete)
		sameKinds(t, "delete without permission", evs, "FETCH_ATOMIC_OVERFLOW")
		if evs[0].Fail != FailNone || tb.UnexpectedLen() != 0 {
			t.Fatalf("%+v, %d left", evs[0], tb.UnexpectedLen())
		}
		tb = setup(t)
		evs = mustSearch(t, tb, Entry{UID: 1, Options: rw | UseOnce, MatchID: anySrc, MatchBits: 1}, SearchDelete) // uid 7 sent it
		sameKinds(t, "delete other uid", evs, "GET_OVERFLOW")
	})
	t.Run("nothing", func(t *testing.T) {
		tb := newTestTable(t, Config{Matching: true})
		for _, op := range []SearchOp{SearchOnly, SearchDelete} {
			evs := mustSearch(t, tb, probe(1, rw), op)
			sameKinds(t, op.String(), evs, "SEARCH")
			if evs[0].Fail != FailNoMatch || evs[0].UserPtr != 55 {
				t.Fatalf("%+v", evs[0])
			}
			evs = mustSearch(t, tb, probe(1, rw|EventCommDisable), op)
			sameKinds(t, op.String(), evs, "-SEARCH")
		}
	})
	t.Run("errors", func(t *testing.T) {
		tb := setup(t)
		_, err := tb.Search(probe(1, rw), SearchOp(2), nil)
		isErr(t, err, ErrInvalidSearchOp)
		_, err = tb.Search(probe(1, 1<<29), SearchOnly, nil)
		isErr(t, err, ErrInvalidOption)
		if tb.UnexpectedLen() != 4 {
			t.Fatal("failed search changed state")
		}
	})
}
