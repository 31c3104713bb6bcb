package nic

import (
	"bytes"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/goportals/goportals/eq"
)

// Tests of the Portals rules for data in flight, list limits and the events of
// overflow entries, each over two processes of one job.

// holdLong makes the next long transfer a target starts stop after it is accounted
// in flight; held is closed once it is held, and release lets it go on.
type holdLong struct {
	held, release chan struct{}
	once          sync.Once
}

func newHoldLong(t *testing.T) *holdLong {
	h := &holdLong{held: make(chan struct{}), release: make(chan struct{})}
	f := func() {
		first := false
		h.once.Do(func() { first = true })
		if first {
			close(h.held)
			<-h.release
		}
	}
	testHoldLong.Store(&f)
	t.Cleanup(func() {
		testHoldLong.Store(nil)
		h.letGo()
	})
	return h
}

func (h *holdLong) letGo() {
	select {
	case <-h.release:
	default:
		close(h.release)
	}
}

func (h *holdLong) wait(t *testing.T) {
	t.Helper()
	select {
	case <-h.held:
	case <-time.After(20 * time.Second):
		t.Fatal("the long transfer never started")
	}
}

// waitingOnEngine waits until a call on ni is observed driving progress while it waits
// (each round of its wait counts an application poll), or fails after 20 s.
func waitingOnEngine(t *testing.T, ni *NI, since uint64, done <-chan error) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for ni.appPolls.Load() < since+3 {
		select {
		case err := <-done:
			t.Fatalf("the call returned (%v) while the data was still moving", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the call neither returned nor waited")
		}
		time.Sleep(50 * time.Microsecond)
	}
	select {
	case err := <-done:
		t.Fatalf("the call returned (%v) while the data was still moving", err)
	default:
	}
}

func anyProc() ProcessID { return ProcessID{NID: NIDAny, PID: PIDAny, Rank: RankAny} }

func mustEQ(t *testing.T, ni *NI) *EQ {
	t.Helper()
	q, err := ni.EQAlloc(256)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

func mustPT(t *testing.T, ni *NI, opts PTOptions, q *EQ) PTIndex {
	t.Helper()
	idx, err := ni.PTAlloc(opts, q, PTAny)
	if err != nil {
		t.Fatal(err)
	}
	return idx
}

func mustME(t *testing.T, ni *NI, idx PTIndex, s MESpec, l List, up uint64) *ME {
	t.Helper()
	m, err := ni.MEAppend(idx, s, l, up)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func putFrom(t *testing.T, init *NI, src []byte, dst *NI, idx PTIndex, bits MatchBits) *EQ {
	t.Helper()
	q := mustEQ(t, init)
	m, err := init.MDBind(MDSpec{Start: src, EQ: q})
	if err != nil {
		t.Fatal(err)
	}
	id := mustPhysID(t, dst)
	if err := Put(m, 0, uint64(len(src)), AckReqFull, id, idx, bits, 0, 1, 0); err != nil {
		t.Fatal(err)
	}
	return q
}

// drain returns the events q holds now, without waiting.
func drain(q *EQ) []Event {
	var evs []Event
	for {
		ev, err := q.Get()
		if err != nil {
			return evs
		}
		evs = append(evs, ev)
	}
}

func eventKinds(evs []Event) []eq.EventKind {
	var k []eq.EventKind
	for _, ev := range evs {
		k = append(k, ev.Type)
	}
	return k
}

func sameEventKinds(a, b []eq.EventKind) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Rule: a long put into an overflow entry cannot be claimed before its data has
// arrived; the overflow entry's events come as PUT, AUTO_UNLINK, then the claim's
// PUT_OVERFLOW, and AUTO_FREE last, when the buffer holds all the data.
func TestRuleLongPutIntoOverflowClaimWaitsForData(t *testing.T) {
	for _, how := range []string{"append", "search-delete"} {
		t.Run(how, func(t *testing.T) {
			nis := newNIs(t, 2, NIMatching|NIPhysical)
			init, tgt := nis[0], nis[1]
			q := mustEQ(t, tgt)
			idx := mustPT(t, tgt, 0, q)
			size := 256 << 10
			ovf := make([]byte, size)
			mustME(t, tgt, idx, MESpec{Start: ovf, UID: UIDAny, Options: MEOpPut | MEUseOnce | MEEventLinkDisable,
				MatchID: anyProc(), MatchBits: 5}, OverflowList, 100)
			hold := newHoldLong(t)
			src := make([]byte, size)
			fill(src, 9)
			putFrom(t, init, src, tgt, idx, 5)
			hold.wait(t)

			done := make(chan error, 1)
			since := tgt.appPolls.Load()
			go func() {
				var err error
				if how == "append" {
					_, err = tgt.MEAppend(idx, MESpec{Start: make([]byte, 8), UID: UIDAny,
						Options: MEOpPut | MEUseOnce | MEEventLinkDisable, MatchID: anyProc(), MatchBits: 5}, PriorityList, 200)
				} else {
					err = tgt.MESearch(idx, MESpec{UID: UIDAny, Options: MEOpPut | MEUseOnce, MatchID: anyProc(),
						MatchBits: 5}, SearchDelete, 200)
				}
				done <- err
			}()
			waitingOnEngine(t, tgt, since, done)
			hold.letGo()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			evs := drain(q)
			want := []eq.EventKind{eq.EventPut, eq.EventAutoUnlink, eq.EventPutOverflow, eq.EventAutoFree}
			if how == "append" {
				want = append(want, eq.EventAutoUnlink) // the claiming use-once entry's own
			}
			if got := eventKinds(evs); !sameEventKinds(got, want) {
				t.Fatalf("events %v, want %v", got, want)
			}
			if !bytes.Equal(ovf, src) {
				t.Fatal("the overflow buffer does not hold the data when AUTO_FREE is delivered")
			}
			// The claim says where the data is: the overflow entry and the address in it.
			po := evs[2]
			if po.DataUserPtr != 100 || po.UserPtr != 200 || po.MLength != uint64(size) {
				t.Fatalf("PUT_OVERFLOW %+v", po)
			}
			if d, ok := po.DataIn(ovf); !ok || !bytes.Equal(d, src) {
				t.Fatalf("PUT_OVERFLOW does not locate the data in the overflow buffer (ok=%v)", ok)
			}
		})
	}
}

// Rule: unlinking an entry with data moving into it is PTL_IN_USE, and no event for the
// entry comes after an unlink that returned OK; an overflow entry that still holds
// unexpected headers is PTL_IN_USE too.
func TestRuleUnlinkInFlightIsInUse(t *testing.T) {
	nis := newNIs(t, 2, NIMatching|NIPhysical)
	init, tgt := nis[0], nis[1]
	q := mustEQ(t, tgt)
	idx := mustPT(t, tgt, 0, q)
	size := 128 << 10
	buf := make([]byte, size)
	m := mustME(t, tgt, idx, MESpec{Start: buf, UID: UIDAny, Options: MEOpPut | MEEventLinkDisable,
		MatchID: anyProc(), MatchBits: 1}, PriorityList, 1)
	hold := newHoldLong(t)
	src := make([]byte, size)
	fill(src, 3)
	putFrom(t, init, src, tgt, idx, 1)
	hold.wait(t)
	if err := m.Unlink(); !errors.Is(err, InUse) {
		t.Fatalf("unlink with a transfer in flight: %v, want PTL_IN_USE", err)
	}
	hold.letGo()
	if ev := waitEvent(t, q); ev.Type != eq.EventPut || ev.NIFail != eq.NIOK {
		t.Fatalf("event %+v", ev)
	}
	if err := m.Unlink(); err != nil {
		t.Fatalf("unlink once the transfer completed: %v", err)
	}
	if evs := drain(q); len(evs) != 0 {
		t.Fatalf("events after the unlink: %v", eventKinds(evs))
	}

	// An overflow entry holding an unexpected header.
	ovf := mustME(t, tgt, idx, MESpec{Start: make([]byte, 64), UID: UIDAny, Options: MEOpPut | MEEventLinkDisable,
		MatchID: anyProc(), MatchBits: 2}, OverflowList, 2)
	putFrom(t, init, make([]byte, 16), tgt, idx, 2)
	if ev := waitEvent(t, q); ev.Type != eq.EventPut || ev.List != eq.OverflowList {
		t.Fatalf("event %+v", ev)
	}
	if err := ovf.Unlink(); !errors.Is(err, InUse) {
		t.Fatalf("unlink of an overflow entry with an unexpected header: %v, want PTL_IN_USE", err)
	}
	if err := tgt.MESearch(idx, MESpec{UID: UIDAny, MatchID: anyProc(), MatchBits: 2}, SearchDelete, 3); err != nil {
		t.Fatal(err)
	}
	if err := ovf.Unlink(); err != nil {
		t.Fatalf("unlink once the header was claimed: %v", err)
	}
}

// Rule: PTDisable returns only once the messages being processed on the entry are
// complete and their events posted.
func TestRulePTDisableWaitsForMessagesInProcess(t *testing.T) {
	nis := newNIs(t, 2, NIMatching|NIPhysical)
	init, tgt := nis[0], nis[1]
	q := mustEQ(t, tgt)
	idx := mustPT(t, tgt, 0, q)
	size := 128 << 10
	mustME(t, tgt, idx, MESpec{Start: make([]byte, size), UID: UIDAny, Options: MEOpPut | MEEventLinkDisable,
		MatchID: anyProc(), MatchBits: 1}, PriorityList, 1)
	hold := newHoldLong(t)
	putFrom(t, init, make([]byte, size), tgt, idx, 1)
	hold.wait(t)
	done := make(chan error, 1)
	since := tgt.appPolls.Load()
	go func() { done <- tgt.PTDisable(idx) }()
	waitingOnEngine(t, tgt, since, done)
	hold.letGo()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	ev, err := q.Get()
	if err != nil || ev.Type != eq.EventPut {
		t.Fatalf("after PTDisable returned: event %+v, %v; want the PUT already posted", ev, err)
	}
}

// Rule: PT_ONLY_USE_ONCE and PT_ONLY_TRUNCATE are hints; entries are never refused.
func TestRulePTHintsNeverRefuse(t *testing.T) {
	ni := newNIs(t, 1, NIMatching|NIPhysical)[0]
	idx := mustPT(t, ni, PTOnlyUseOnce|PTOnlyTruncate, nil)
	if _, err := ni.MEAppend(idx, MESpec{Start: make([]byte, 64), UID: UIDAny, Options: MEOpPut | MEManageLocal | MENoTruncate,
		MatchID: anyProc()}, OverflowList, 0); err != nil {
		t.Fatalf("a persistent, non-truncating entry on a PT with both hints: %v", err)
	}
}

// Rule: max_entries counts entries across the NI; over max_list_size, either list
// answers NO_SPACE.
func TestRuleEntryAndListLimits(t *testing.T) {
	ni := newNIsWith(t, 1, NIMatching|NIPhysical, &Limits{MaxEntries: 3, MaxListSize: 2})[0]
	if l := ni.Limits(); l.MaxEntries != 3 || l.MaxListSize != 2 {
		t.Fatalf("granted %+v", l)
	}
	a, b := mustPT(t, ni, 0, nil), mustPT(t, ni, 0, nil)
	spec := MESpec{Start: make([]byte, 8), UID: UIDAny, Options: MEOpPut, MatchID: anyProc()}
	mustME(t, ni, a, spec, PriorityList, 0)
	mustME(t, ni, a, spec, PriorityList, 0)
	if _, err := ni.MEAppend(a, spec, PriorityList, 0); !errors.Is(err, NoSpace) {
		t.Fatalf("third entry on a priority list of max_list_size 2: %v, want PTL_NO_SPACE", err)
	}
	mustME(t, ni, b, spec, OverflowList, 0)
	if _, err := ni.MEAppend(b, spec, OverflowList, 0); !errors.Is(err, NoSpace) {
		t.Fatalf("fourth entry on an NI of max_entries 3: %v, want PTL_NO_SPACE", err)
	}
}

// Rule: without PTL_PT_FLOWCTRL a full unexpected list is a plain drop: NI_DROPPED,
// no PT_DISABLED event, the entry stays enabled.
func TestRuleNoFlowCtrlFullUnexpectedIsDrop(t *testing.T) {
	nis := newNIsWith(t, 2, NIMatching|NIPhysical, &Limits{MaxUnexpectedHeaders: 1})
	init, tgt := nis[0], nis[1]
	q := mustEQ(t, tgt)
	idx := mustPT(t, tgt, 0, q)
	mustME(t, tgt, idx, MESpec{Start: make([]byte, 256), UID: UIDAny, Options: MEOpPut | MEManageLocal | MEEventLinkDisable,
		MatchID: anyProc(), IgnoreBits: ^MatchBits(0)}, OverflowList, 0)
	iq := putFrom(t, init, make([]byte, 8), tgt, idx, 1)
	if ev := waitEvent(t, q); ev.Type != eq.EventPut {
		t.Fatalf("first put: %+v", ev)
	}
	iq2 := putFrom(t, init, make([]byte, 8), tgt, idx, 2)
	for _, qq := range []*EQ{iq, iq2} {
		for {
			ev := waitEvent(t, qq)
			if ev.Type != eq.EventAck {
				continue
			}
			if qq == iq2 && ev.NIFail != eq.NIDropped {
				t.Fatalf("put beyond the unexpected list: ack %v, want PTL_NI_DROPPED", ev.NIFail)
			}
			break
		}
	}
	if evs := drain(q); len(evs) != 0 {
		t.Fatalf("target events after the drop: %v", eventKinds(evs))
	}
	// Still enabled: a put to a priority entry lands.
	mustME(t, tgt, idx, MESpec{Start: make([]byte, 8), UID: UIDAny, Options: MEOpPut | MEEventLinkDisable,
		MatchID: anyProc(), MatchBits: 3}, PriorityList, 0)
	putFrom(t, init, make([]byte, 8), tgt, idx, 3)
	if ev := waitEvent(t, q); ev.Type != eq.EventPut || ev.NIFail != eq.NIOK {
		t.Fatalf("after the drop: %+v", ev)
	}
}

// Rule: a put to a portal index nobody allocated is acked NI_DROPPED.
func TestRulePutToUnallocatedIndexIsDropped(t *testing.T) {
	nis := newNIs(t, 2, NIMatching|NIPhysical)
	iq := putFrom(t, nis[0], make([]byte, 8), nis[1], 17, 0)
	for {
		ev := waitEvent(t, iq)
		if ev.Type == eq.EventAck {
			if ev.NIFail != eq.NIDropped {
				t.Fatalf("ack %v, want PTL_NI_DROPPED", ev.NIFail)
			}
			return
		}
	}
}

// Rule: the engine claims unexpected headers without checking permissions, as the
// reference does: an entry of another uid that allows only gets still claims a put's
// header, by append and by SEARCH_DELETE alike.
func TestRuleNoPermissionCheckOnUnexpected(t *testing.T) {
	nis := newNIs(t, 2, NIMatching|NIPhysical)
	init, tgt := nis[0], nis[1]
	q := mustEQ(t, tgt)
	idx := mustPT(t, tgt, 0, q)
	mustME(t, tgt, idx, MESpec{Start: make([]byte, 64), UID: UIDAny, Options: MEOpPut | MEManageLocal | MEEventLinkDisable,
		MatchID: anyProc(), IgnoreBits: ^MatchBits(0)}, OverflowList, 0)
	for _, bits := range []MatchBits{1, 2} {
		putFrom(t, init, make([]byte, 8), tgt, idx, bits)
		if ev := waitEvent(t, q); ev.Type != eq.EventPut {
			t.Fatalf("put %d: %+v", bits, ev)
		}
	}
	strict := MESpec{Start: make([]byte, 8), UID: 12345, Options: MEOpGet | MEUseOnce | MEEventLinkDisable,
		MatchID: anyProc(), MatchBits: 1}
	mustME(t, tgt, idx, strict, PriorityList, 7)
	if ev := waitEvent(t, q); ev.Type != eq.EventPutOverflow || ev.NIFail != eq.NIOK {
		t.Fatalf("append: %+v, want PUT_OVERFLOW", ev)
	}
	strict.MatchBits = 2
	if err := tgt.MESearch(idx, strict, SearchDelete, 8); err != nil {
		t.Fatal(err)
	}
	for {
		ev := waitEvent(t, q)
		if ev.Type == eq.EventAutoUnlink {
			continue
		}
		if ev.Type != eq.EventPutOverflow || ev.NIFail != eq.NIOK || ev.UserPtr != 8 {
			t.Fatalf("search-delete: %+v, want PUT_OVERFLOW", ev)
		}
		break
	}
}

// Rule: a failed long transfer posts its failure event even when the entry disables
// success events.
func TestRuleFailedLongTransferPostsWithSuccessDisabled(t *testing.T) {
	nis := newNIs(t, 2, NIMatching|NIPhysical)
	init, tgt := nis[0], nis[1]
	q := mustEQ(t, tgt)
	idx := mustPT(t, tgt, 0, q)
	size := 128 << 10
	mustME(t, tgt, idx, MESpec{Start: make([]byte, size), UID: UIDAny,
		Options: MEOpPut | MEEventLinkDisable | MEEventSuccessDisable, MatchID: anyProc(), MatchBits: 1}, PriorityList, 1)
	hold := newHoldLong(t)
	putFrom(t, init, make([]byte, size), tgt, idx, 1)
	hold.wait(t)
	init.proc.Close() // the initiator goes away with the data still to be pulled
	hold.letGo()
	ev := waitEvent(t, q)
	if ev.Type != eq.EventPut || ev.NIFail == eq.NIOK {
		t.Fatalf("event %+v, want a failed PUT", ev)
	}
}

// Rule: AUTO_FREE is the last event of an overflow entry even when one message both
// unlinks and frees it (a use-once entry that keeps no unexpected header).
func TestRuleAutoFreeLastInOneBatch(t *testing.T) {
	for _, size := range []int{64, 256 << 10} {
		nis := newNIs(t, 2, NIMatching|NIPhysical)
		init, tgt := nis[0], nis[1]
		q := mustEQ(t, tgt)
		idx := mustPT(t, tgt, 0, q)
		mustME(t, tgt, idx, MESpec{Start: make([]byte, size), UID: UIDAny,
			Options: MEOpPut | MEUseOnce | MEUnexpectedHdrDisable | MEEventLinkDisable,
			MatchID: anyProc(), MatchBits: 5}, OverflowList, 100)
		putFrom(t, init, make([]byte, size), tgt, idx, 5)
		var got []eq.EventKind
		for len(got) < 3 {
			got = append(got, waitEvent(t, q).Type)
		}
		if want := []eq.EventKind{eq.EventPut, eq.EventAutoUnlink, eq.EventAutoFree}; !sameEventKinds(got, want) {
			t.Fatalf("size %d: events %v, want %v", size, got, want)
		}
	}
}
