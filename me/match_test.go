package me

import (
	"testing"
)

func TestMatchBitsAndIgnoreBits(t *testing.T) {
	cases := []struct {
		name          string
		match, ignore uint64
		msg           uint64
		want          bool
	}{
		{"exact equal", 0x1234, 0, 0x1234, true},
		{"exact differ", 0x1234, 0, 0x1235, false},
		{"ignored low bits", 0x1230, 0xf, 0x123f, true},
		{"ignored bits do not cover", 0x1230, 0xf, 0x1330, false},
		{"entry bits under ignore", 0x123f, 0xf, 0x1230, true},
		{"all ignored", 0, ^uint64(0), 0xdeadbeef, true},
		{"high bit", 1 << 63, 0, 1 << 63, true},
		{"high bit ignored", 0, 1 << 63, 1 << 63, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tb := newTestTable(t, Config{Matching: true})
			mustAppend(t, tb, Entry{Length: 8, UID: UIDAny, Options: rw, MatchID: anySrc, MatchBits: c.match, IgnoreBits: c.ignore}, ListPriority)
			h := put(c.msg, 8)
			res, _ := tb.Match(&h, nil)
			if got := res.Outcome == OutcomeMatched; got != c.want {
				t.Fatalf("outcome %v, want matched=%v", res.Outcome, c.want)
			}
		})
	}
}

func TestMatchID(t *testing.T) {
	src := ProcessID{NID: 1, PID: 2, Rank: 3}
	cases := []struct {
		name string
		mode Addressing
		id   ProcessID
		want bool
	}{
		{"physical exact", Physical, ProcessID{NID: 1, PID: 2}, true},
		{"physical rank ignored", Physical, ProcessID{NID: 1, PID: 2, Rank: 99}, true},
		{"physical nid differs", Physical, ProcessID{NID: 9, PID: 2}, false},
		{"physical pid differs", Physical, ProcessID{NID: 1, PID: 9}, false},
		{"physical nid any", Physical, ProcessID{NID: NIDAny, PID: 2}, true},
		{"physical pid any", Physical, ProcessID{NID: 1, PID: PIDAny}, true},
		{"physical nid any pid differs", Physical, ProcessID{NID: NIDAny, PID: 9}, false},
		{"physical both any", Physical, ProcessID{NID: NIDAny, PID: PIDAny}, true},
		{"logical exact", Logical, ProcessID{Rank: 3}, true},
		{"logical nid/pid ignored", Logical, ProcessID{NID: 9, PID: 9, Rank: 3}, true},
		{"logical differs", Logical, ProcessID{NID: 1, PID: 2, Rank: 4}, false},
		{"logical any", Logical, ProcessID{Rank: RankAny}, true},
	}
	for _, c := range cases {
		for _, ignore := range []uint64{0, 0xff} { // hashed and ordered-list paths
			tb := newTestTable(t, Config{Matching: true, Addressing: c.mode})
			mustAppend(t, tb, Entry{Length: 8, UID: UIDAny, Options: rw, MatchID: c.id, MatchBits: 5, IgnoreBits: ignore}, ListPriority)
			h := put(5, 8)
			h.Initiator = src
			res, _ := tb.Match(&h, nil)
			if got := res.Outcome == OutcomeMatched; got != c.want {
				t.Errorf("%s (ignore %#x): outcome %v, want matched=%v", c.name, ignore, res.Outcome, c.want)
			}
		}
	}
}

// TestFirstInListOrderWins checks that the earliest linked accepting entry wins whether it
// is hashed (exact bits) or in the ordered list (ignore bits), and that the priority list
// is searched before the overflow list.
func TestFirstInListOrderWins(t *testing.T) {
	exact := Entry{Length: 8, UID: UIDAny, Options: rw, MatchID: anySrc, MatchBits: 7}
	wild := Entry{Length: 8, UID: UIDAny, Options: rw, MatchID: anySrc, MatchBits: 0, IgnoreBits: 0xf}
	srcOnly := Entry{Length: 8, UID: UIDAny, Options: rw, MatchID: ProcessID{NID: 5, PID: 5}, MatchBits: 7}
	cases := []struct {
		name  string
		order []Entry
		lists []List
		want  int // index of the winner
	}{
		{"exact before wildcard", []Entry{exact, wild}, []List{ListPriority, ListPriority}, 0},
		{"wildcard before exact", []Entry{wild, exact}, []List{ListPriority, ListPriority}, 0},
		{"exact from other source skipped", []Entry{srcOnly, wild, exact}, []List{ListPriority, ListPriority, ListPriority}, 1},
		{"second exact in bin", []Entry{srcOnly, exact, wild}, []List{ListPriority, ListPriority, ListPriority}, 1},
		{"priority before earlier overflow", []Entry{exact, wild}, []List{ListOverflow, ListPriority}, 1},
		{"overflow when priority refuses", []Entry{srcOnly, exact}, []List{ListPriority, ListOverflow}, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tb := newTestTable(t, Config{Matching: true, MaxUnexpectedHeaders: 4})
			for i, e := range c.order {
				e.UserPtr = uint64(i)
				mustAppend(t, tb, e, c.lists[i])
			}
			h := put(7, 8)
			res, _ := tb.Match(&h, nil)
			if res.Outcome != OutcomeMatched || res.UserPtr != uint64(c.want) || res.List != c.lists[c.want] {
				t.Fatalf("result %+v, want entry %d in %v", res, c.want, c.lists[c.want])
			}
		})
	}
}

func TestPermissions(t *testing.T) {
	cases := []struct {
		opts Options
		uid  UID
		op   Op
		want Outcome
	}{
		{OpPut, UIDAny, OpKindPut, OutcomeMatched},
		{OpGet, UIDAny, OpKindPut, OutcomeOpViolation},
		{OpGet, UIDAny, OpKindGet, OutcomeMatched},
		{OpPut, UIDAny, OpKindGet, OutcomeOpViolation},
		{OpPut, UIDAny, OpKindAtomic, OutcomeMatched},
		{OpGet, UIDAny, OpKindAtomic, OutcomeOpViolation},
		{OpPut, UIDAny, OpKindFetchAtomic, OutcomeOpViolation},
		{OpGet, UIDAny, OpKindSwap, OutcomeOpViolation},
		{rw, UIDAny, OpKindFetchAtomic, OutcomeMatched},
		{rw, UIDAny, OpKindSwap, OutcomeMatched},
		{0, UIDAny, OpKindPut, OutcomeOpViolation},
		{rw, 7, OpKindPut, OutcomeMatched},
		{rw, 8, OpKindPut, OutcomePermViolation},
		{0, 8, OpKindPut, OutcomePermViolation}, // uid is checked first
	}
	for _, list := range []List{ListPriority, ListOverflow} {
		for _, c := range cases {
			tb := newTestTable(t, Config{Matching: true, MaxUnexpectedHeaders: 4})
			hd, _ := mustAppend(t, tb, Entry{Length: 8, UID: c.uid, Options: c.opts | ManageLocal | UseOnce, MatchID: anySrc, MatchBits: 1}, list)
			// A later entry that would accept: a refused message must not fall through.
			mustAppend(t, tb, Entry{Length: 8, UID: UIDAny, Options: rw, MatchID: anySrc, MatchBits: 1}, list)
			h := put(1, 4)
			h.Op = c.op
			res, evs := tb.Match(&h, nil)
			if res.Outcome != c.want {
				t.Fatalf("%v %v uid %d %v: outcome %v, want %v", list, c.opts, c.uid, c.op, res.Outcome, c.want)
			}
			if c.want == OutcomeMatched {
				continue
			}
			if res.Handle != hd || len(evs) != 0 {
				t.Fatalf("refusal: result %+v events %v", res, kinds(evs))
			}
			st, err := tb.State(hd)
			if err != nil || !st.Linked || st.LocalOffset != 0 || tb.UnexpectedLen() != 0 {
				t.Fatalf("refusal changed state: %+v %v, %d headers", st, err, tb.UnexpectedLen())
			}
		}
	}
}

func TestTruncationAndOffsets(t *testing.T) {
	cases := []struct {
		name       string
		opts       Options
		length     uint64
		roff, rlen uint64
		matched    bool
		off, mlen  uint64
	}{
		{"fits", 0, 16, 4, 8, true, 4, 8},
		{"truncated", 0, 16, 10, 8, true, 10, 6},
		{"offset at end", 0, 16, 16, 8, true, 16, 0},
		{"offset beyond", 0, 16, 20, 8, true, 20, 0},
		{"zero-length entry", 0, 0, 0, 8, true, 0, 0},
		{"zero-length message", 0, 16, 3, 0, true, 3, 0},
		{"no-truncate fits", NoTruncate, 16, 8, 8, true, 8, 8},
		{"no-truncate refuses", NoTruncate, 16, 9, 8, false, 0, 0},
		{"no-truncate offset beyond", NoTruncate, 16, 17, 0, false, 0, 0},
		{"no-truncate huge length", NoTruncate, 16, 1, ^uint64(0), false, 0, 0},
		{"manage-local ignores remote offset", ManageLocal, 16, 9, 8, true, 0, 8},
		{"manage-local no-truncate uses local offset", ManageLocal | NoTruncate, 16, 12, 16, true, 0, 16},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tb := newTestTable(t, Config{Matching: true})
			mustAppend(t, tb, Entry{Length: c.length, UID: UIDAny, Options: rw | c.opts, MatchID: anySrc, MatchBits: 3}, ListPriority)
			h := put(3, c.rlen)
			h.RemoteOffset = c.roff
			res, evs := tb.Match(&h, nil)
			if (res.Outcome == OutcomeMatched) != c.matched {
				t.Fatalf("outcome %v, want matched=%v", res.Outcome, c.matched)
			}
			if !c.matched {
				return
			}
			if res.LocalOffset != c.off || res.MLength != c.mlen {
				t.Fatalf("offset %d mlength %d, want %d %d", res.LocalOffset, res.MLength, c.off, c.mlen)
			}
			if evs[0].Header.Length != c.rlen || evs[0].MLength != c.mlen || evs[0].LocalOffset != c.off {
				t.Fatalf("event %+v", evs[0])
			}
		})
	}
}

// TestNoTruncateFallsThrough: a no-truncate entry without room does not match, and
// matching continues with the next entry, as the reference implementation does.
func TestNoTruncateFallsThrough(t *testing.T) {
	tb := newTestTable(t, Config{Matching: true})
	mustAppend(t, tb, Entry{Length: 4, UID: UIDAny, Options: rw | NoTruncate, MatchID: anySrc, MatchBits: 1, UserPtr: 1}, ListPriority)
	mustAppend(t, tb, Entry{Length: 64, UID: UIDAny, Options: rw, MatchID: anySrc, MatchBits: 1, UserPtr: 2}, ListPriority)
	h := put(1, 8)
	if res, _ := tb.Match(&h, nil); res.UserPtr != 2 || res.MLength != 8 {
		t.Fatalf("result %+v, want entry 2", res)
	}
	h.Length = 4
	if res, _ := tb.Match(&h, nil); res.UserPtr != 1 {
		t.Fatalf("result %+v, want entry 1", res)
	}
}

func TestManageLocalAndMinFree(t *testing.T) {
	tb := newTestTable(t, Config{Matching: true})
	hd, _ := mustAppend(t, tb, Entry{Length: 32, MinFree: 10, UID: UIDAny, Options: rw | ManageLocal | MayAlign, MatchID: anySrc, MatchBits: 2, UserPtr: 9}, ListPriority)
	steps := []struct {
		rlen, off, mlen uint64
		unlinked        bool
	}{
		{8, 0, 8, false},   // 24 left
		{10, 8, 10, false}, // 14 left
		{3, 18, 3, false},  // 11 left
		{2, 21, 2, true},   // 9 left < 10: unlinks
	}
	for i, s := range steps {
		h := put(2, s.rlen)
		h.RemoteOffset = 1000 // never used
		res, evs := tb.Match(&h, nil)
		if res.Outcome != OutcomeMatched || res.LocalOffset != s.off || res.MLength != s.mlen || res.Unlinked != s.unlinked {
			t.Fatalf("step %d: %+v, want off %d mlen %d unlinked %v", i, res, s.off, s.mlen, s.unlinked)
		}
		if s.unlinked {
			sameKinds(t, "min_free unlink", evs, "AUTO_UNLINK", "PUT")
		} else {
			sameKinds(t, "deposit", evs, "PUT")
			if st := mustState(t, tb, hd); st.LocalOffset != s.off+s.mlen {
				t.Fatalf("step %d: local offset %d", i, st.LocalOffset)
			}
		}
	}
	if tb.Len(ListPriority) != 0 {
		t.Fatal("entry still linked after min_free")
	}
	isErr(t, tb.Unlink(hd), ErrUnknownHandle)
}

// TestMinFreeNeedsManageLocal: min_free is read only with ManageLocal, as the spec says.
func TestMinFreeNeedsManageLocal(t *testing.T) {
	tb := newTestTable(t, Config{Matching: true})
	mustAppend(t, tb, Entry{Length: 8, MinFree: 100, UID: UIDAny, Options: rw, MatchID: anySrc}, ListPriority)
	h := put(0, 8)
	if res, _ := tb.Match(&h, nil); res.Unlinked {
		t.Fatal("min_free unlinked an entry without ManageLocal")
	}
}

func TestManageLocalTruncatesAtEnd(t *testing.T) {
	tb := newTestTable(t, Config{Matching: true})
	mustAppend(t, tb, Entry{Length: 10, UID: UIDAny, Options: rw | ManageLocal, MatchID: anySrc}, ListPriority)
	for i, want := range []uint64{6, 4, 0, 0} {
		h := put(0, 6)
		if res, _ := tb.Match(&h, nil); res.MLength != want {
			t.Fatalf("match %d: mlength %d, want %d", i, res.MLength, want)
		}
	}
}

func TestUseOnce(t *testing.T) {
	for _, ignore := range []uint64{0, 1} {
		tb := newTestTable(t, Config{Matching: true})
		hd, _ := mustAppend(t, tb, Entry{Length: 8, UID: UIDAny, Options: rw | UseOnce, MatchID: anySrc, MatchBits: 4, IgnoreBits: ignore, UserPtr: 1}, ListPriority)
		h := put(4, 8)
		res, evs := tb.Match(&h, nil)
		if !res.Unlinked || res.Handle != hd {
			t.Fatalf("result %+v", res)
		}
		sameKinds(t, "use once", evs, "AUTO_UNLINK", "PUT")
		if res, _ := tb.Match(&h, nil); res.Outcome != OutcomeNoMatch {
			t.Fatalf("second match %v", res.Outcome)
		}
		isErr(t, tb.Unlink(hd), ErrUnknownHandle)
		if _, err := tb.State(hd); err == nil {
			t.Fatal("State of unlinked entry succeeded")
		}
	}
}

func TestOpEvents(t *testing.T) {
	for op, want := range map[Op]string{OpKindPut: "PUT", OpKindGet: "GET", OpKindAtomic: "ATOMIC", OpKindFetchAtomic: "FETCH_ATOMIC", OpKindSwap: "FETCH_ATOMIC"} {
		tb := newTestTable(t, Config{Matching: true})
		mustAppend(t, tb, Entry{Length: 8, UID: UIDAny, Options: rw, MatchID: anySrc}, ListPriority)
		h := put(0, 8)
		h.Op = op
		_, evs := tb.Match(&h, nil)
		sameKinds(t, op.String(), evs, want)
	}
}

func TestEventOptions(t *testing.T) {
	cases := []struct {
		opts Options
		want []string
		ct   uint64 // expected CTInc, 0 for no counting
	}{
		{0, []string{"PUT"}, 0},
		{EventCommDisable, []string{"-PUT"}, 0},
		{EventSuccessDisable, []string{"-PUT"}, 0},
		{EventCTComm, []string{"PUT"}, 1},
		{EventCTComm | EventCTBytes, []string{"PUT"}, 5},
		{EventCTComm | EventCommDisable, []string{"-PUT"}, 1},
		{EventCTBytes, []string{"PUT"}, 0},
		{EventCTOverflow, []string{"PUT"}, 0},
		{UseOnce, []string{"AUTO_UNLINK", "PUT"}, 0},
		{UseOnce | EventUnlinkDisable, []string{"-AUTO_UNLINK", "PUT"}, 0},
		{UseOnce | EventCommDisable, []string{"AUTO_UNLINK", "-PUT"}, 0},
		{EventOverDisable | EventLinkDisable | EventFlowCtrlDisable, []string{"PUT"}, 0},
	}
	for _, c := range cases {
		tb := newTestTable(t, Config{Matching: true})
		_, lev := mustAppend(t, tb, Entry{Length: 8, UID: UIDAny, Options: rw | c.opts, MatchID: anySrc}, ListPriority)
		if c.opts&EventLinkDisable != 0 {
			sameKinds(t, "link", lev, "-LINK")
		} else {
			sameKinds(t, "link", lev, "LINK")
		}
		h := put(0, 5)
		_, evs := tb.Match(&h, nil)
		sameKinds(t, c.opts.String(), evs, c.want...)
		comm := evs[len(evs)-1]
		if comm.CT != (c.ct != 0) || comm.CTInc != c.ct {
			t.Fatalf("%v: CT %v %d, want %d", c.opts, comm.CT, comm.CTInc, c.ct)
		}
	}
}

func TestAckDisable(t *testing.T) {
	for _, opts := range []Options{0, AckDisable} {
		tb := newTestTable(t, Config{Matching: true})
		mustAppend(t, tb, Entry{Length: 8, UID: UIDAny, Options: rw | opts, MatchID: anySrc}, ListPriority)
		h := put(0, 8)
		if res, _ := tb.Match(&h, nil); res.AckDisabled != (opts != 0) {
			t.Fatalf("%v: AckDisabled %v", opts, res.AckDisabled)
		}
	}
}

func TestSizeLimits(t *testing.T) {
	tb := newTestTable(t, Config{Matching: true, MaxMsgSize: 100, MaxAtomicSize: 8})
	mustAppend(t, tb, Entry{Length: 1000, UID: UIDAny, Options: rw, MatchID: anySrc}, ListPriority)
	for op, want := range map[Op]uint64{OpKindPut: 100, OpKindGet: 100, OpKindAtomic: 8, OpKindFetchAtomic: 8, OpKindSwap: 8} {
		h := put(0, 500)
		h.Op = op
		if res, _ := tb.Match(&h, nil); res.MLength != want {
			t.Fatalf("%v: mlength %d, want %d", op, res.MLength, want)
		}
	}
}

func TestInvalidHeaderAndNoMatch(t *testing.T) {
	tb := newTestTable(t, Config{Matching: true})
	mustAppend(t, tb, Entry{Length: 8, UID: UIDAny, Options: rw, MatchID: anySrc, IgnoreBits: ^uint64(0)}, ListPriority)
	for _, op := range []Op{0, OpKindSwap + 1, 255} {
		h := put(0, 8)
		h.Op = op
		if res, evs := tb.Match(&h, nil); res.Outcome != OutcomeInvalidHeader || len(evs) != 0 {
			t.Fatalf("op %d: %+v %v", op, res, kinds(evs))
		}
	}
	empty := newTestTable(t, Config{Matching: true})
	h := put(0, 8)
	if res, evs := empty.Match(&h, nil); res.Outcome != OutcomeNoMatch || len(evs) != 0 {
		t.Fatalf("empty table: %+v %v", res, kinds(evs))
	}
}

func TestOptionsString(t *testing.T) {
	if s := (OpPut | UseOnce).String(); s != "OpPut|UseOnce" {
		t.Fatal(s)
	}
	if s := Options(1 << 30).String(); s != "0x40000000" {
		t.Fatal(s)
	}
	for k := EventPut; k <= EventPTDisabled; k++ {
		if k.String() == "invalid-event" {
			t.Fatalf("kind %d has no name", k)
		}
	}
}

// TestEmptyBinsSwept: a stream of distinct match bits through use-once entries does not
// grow the hash without bound, and matching stays correct across sweeps.
func TestEmptyBinsSwept(t *testing.T) {
	tb := newTestTable(t, Config{Matching: true, MaxEntries: 8, MaxListSize: 8})
	tb.sweepFloor = 16
	mustAppend(t, tb, Entry{Length: 8, UID: UIDAny, Options: rw, MatchID: anySrc, MatchBits: 1 << 62, UserPtr: 1}, ListPriority)
	for i := uint64(0); i < 5000; i++ {
		mustAppend(t, tb, Entry{Length: 8, UID: UIDAny, Options: rw | UseOnce, MatchID: anySrc, MatchBits: i, UserPtr: 2}, ListPriority)
		h := put(i, 8)
		if res, _ := tb.Match(&h, nil); res.UserPtr != 2 || !res.Unlinked {
			t.Fatalf("match %d: %+v", i, res)
		}
		if n := tb.lists[ListPriority].bins.len(); n > tb.sweepFloor+2 {
			t.Fatalf("after %d: %d bins held", i, n)
		}
	}
	h := put(1<<62, 8)
	if res, _ := tb.Match(&h, nil); res.UserPtr != 1 {
		t.Fatalf("persistent entry lost: %+v", res)
	}
	if n := len(tb.lists[ListPriority].bins.slots); n > 4*tb.sweepFloor {
		t.Fatalf("%d bin slots allocated", n)
	}
}

func TestNames(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{OutcomeMatched.String(), "matched"}, {OutcomeNoMatch.String(), "no-match"},
		{OutcomePermViolation.String(), "perm-violation"}, {OutcomeOpViolation.String(), "op-violation"},
		{OutcomeUnexpectedFull.String(), "unexpected-full"}, {OutcomeInvalidHeader.String(), "invalid-header"},
		{Outcome(0).String(), "invalid-outcome"},
		{FailNone.String(), "OK"}, {FailNoMatch.String(), "NO_MATCH"}, {FailPTDisabled.String(), "PT_DISABLED"},
		{Fail(9).String(), "invalid-fail"}, {EventKind(0).String(), "invalid-event"},
		{Physical.String(), "physical"}, {Logical.String(), "logical"}, {Addressing(5).String(), "invalid-addressing"},
		{ListPriority.String(), "PTL_PRIORITY_LIST"}, {ListOverflow.String(), "PTL_OVERFLOW_LIST"}, {List(3).String(), "List(3)"},
		{SearchOnly.String(), "search-only"}, {SearchDelete.String(), "search-delete"}, {SearchOp(3).String(), "invalid-search-op"},
		{OpKindPut.String(), "put"}, {OpKindSwap.String(), "swap"}, {Op(0).String(), "invalid-op"},
		{Options(0).String(), "0"},
	} {
		if c.got != c.want {
			t.Errorf("name %q, want %q", c.got, c.want)
		}
	}
	if !(OpPut | OpGet).Has(OpGet) || OpPut.Has(OpPut|OpGet) {
		t.Error("Options.Has")
	}
	tb := newTestTable(t, Config{Matching: true, MaxEntries: 5})
	if tb.Config().MaxEntries != 5 || tb.Len(List(9)) != 0 {
		t.Error("Config/Len")
	}
}
