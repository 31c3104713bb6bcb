package nic

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/goportals/goportals/eq"
	"github.com/goportals/goportals/internal/mdreg"
)

// setPushPuts sets whether this process offers to push its long puts (without
// splitting them), for one test.
func setPushPuts(t *testing.T, on bool) {
	setLongPut(t, map[bool]string{true: "push", false: "pull"}[on])
}

// setLongPut sets PTL_LONG_PUT's mode (split, push or pull) for one test.
func setLongPut(t *testing.T, mode string) {
	oldPush, oldSplit := pushPuts, splitPuts
	pushPuts, splitPuts = mode != "pull", mode == "split"
	t.Cleanup(func() { pushPuts, splitPuts = oldPush, oldSplit })
}

// evSummary is what must not depend on who moved a long put's data.
func evSummary(evs []Event) string {
	var b bytes.Buffer
	for _, e := range evs {
		fmt.Fprintf(&b, "%v fail=%v mlen=%d rlen=%d roff=%d up=%d; ", e.Type, e.NIFail, e.MLength, e.RLength,
			e.RemoteOffset, e.UserPtr)
	}
	return b.String()
}

// TestLongPutPushOrPull: long puts, from a descriptor of several segments into an
// entry of several segments, whole and truncated, move the same bytes and post the
// same events at both ends whether the initiator pushes them, the target pulls
// them (PTL_LONG_PUT=pull), or, over shared memory, each moves a part (split, the
// default); the push and the split count as pushes, the split as a split at the
// target.
func TestLongPutPushOrPull(t *testing.T) {
	modes := []string{"split", "push", "pull"}
	got := make([]string, len(modes))
	for i, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			setLongPut(t, mode)
			nis := newNIs(t, 2, NIMatching|NIPhysical)
			init, tgt := nis[0], nis[1]
			tq := mustEQ(t, tgt)
			idx := mustPT(t, tgt, 0, tq)
			// The entry: three pieces (a large one, a tiny one, the rest); the
			// second entry is shorter than the put (truncation), with a guard after.
			const size = 300 << 10
			whole := make([]byte, size)
			iov := [][]byte{whole[:100<<10], whole[100<<10 : 100<<10+7], whole[100<<10+7:]}
			mustME(t, tgt, idx, MESpec{Iovecs: iov, UID: UIDAny, Options: MEOpPut | MEUseOnce,
				MatchID: anyProc(), MatchBits: 1}, PriorityList, 11)
			short := make([]byte, 200<<10+64)
			mustME(t, tgt, idx, MESpec{Start: short[:200<<10], UID: UIDAny, Options: MEOpPut | MEUseOnce,
				MatchID: anyProc(), MatchBits: 2}, PriorityList, 12)

			iq := mustEQ(t, init)
			src := make([]byte, size+5000)
			fill(src, 3)
			md, err := init.MDBind(MDSpec{Iovecs: [][]byte{src[:5000], src[5000 : 5000+size/2], src[5000+size/2:]}, EQ: iq})
			if err != nil {
				t.Fatal(err)
			}
			id := mustPhysID(t, tgt)
			before, splitBefore := init.Pushes(), tgt.Splits()
			if err := Put(md, 5000, size, AckReqFull, id, idx, 1, 0, 1, 0); err != nil {
				t.Fatal(err)
			}
			if err := Put(md, 1000, size, AckReqFull, id, idx, 2, 0, 2, 0); err != nil {
				t.Fatal(err)
			}
			var ievs, tevs []Event
			for len(ievs) < 4 {
				ievs = append(ievs, waitEvent(t, iq))
			}
			for len(tevs) < 4 {
				tevs = append(tevs, waitEvent(t, tq))
			}
			if !bytes.Equal(whole, src[5000:5000+size]) {
				t.Fatal("the iovec entry does not hold the put's data")
			}
			if !bytes.Equal(short[:200<<10], src[1000:1000+200<<10]) {
				t.Fatal("the truncated entry does not hold the first mlength bytes")
			}
			if !bytes.Equal(short[200<<10:], make([]byte, 64)) {
				t.Fatal("a truncated put wrote past its entry")
			}
			pushes := init.Pushes() - before
			if want := map[string]uint64{"split": 2, "push": 2, "pull": 0}[mode]; pushes != want {
				t.Fatalf("%d puts pushed, want %d", pushes, want)
			}
			splits := tgt.Splits() - splitBefore
			if want := map[string]uint64{"split": 2, "push": 0, "pull": 0}[mode]; splits != want {
				t.Fatalf("%d puts split, want %d (path %q)", splits, want, tgt.Path())
			}
			got[i] = evSummary(ievs) + "| " + evSummary(tevs)
		})
	}
	for i := 1; i < len(got); i++ {
		if got[i] != got[0] {
			t.Fatalf("events differ:\n%s: %s\n%s: %s", modes[0], got[0], modes[i], got[i])
		}
	}
	if want := fmt.Sprint(eq.EventAck); !bytes.Contains([]byte(got[0]), []byte(want)) {
		t.Fatalf("no ACK among %s", got[0])
	}
}

// pushedRequest hands tgt a long put header from pr as if the initiator offered
// to push it, and returns the target operation waiting for its FIN.
func pushedRequest(t *testing.T, tgt *NI, pr *peer, idx PTIndex, n uint64) *targetOp {
	t.Helper()
	setLongPut(t, "push") // (its segment names no memory the target could read)
	src := make([]byte, n)
	seg := make([]byte, 16)
	putSeg(seg, mdreg.RemoteSegment{Addr: addrOf(src), Len: uint32(n), RKey: 1})
	h := header{kind: msgPut, flags: hfLong | hfPush, ack: uint8(AckReqFull), pt: uint32(idx), match: 1,
		length: n, opid: 77}
	tgt.handleRequest(pr, &h, seg)
	tgt.mu.Lock()
	defer tgt.mu.Unlock()
	for _, top := range tgt.tops {
		if top.pr == pr && top.push {
			return top
		}
	}
	t.Fatal("no pushed target operation waits for its FIN")
	return nil
}

// TestPushedPutPeerFails: a target waiting for a pushed put's FIN completes it,
// failed, when the initiator's connection fails, and the entry can go.
func TestPushedPutPeerFails(t *testing.T) {
	// No progress goroutines: the initiator (nis[0]) never runs progress here, so
	// the CTS stays unread and no FIN, not even a failed one, comes back.
	testNoHelpers.Store(true)
	t.Cleanup(func() { testNoHelpers.Store(false) })
	nis := newNIs(t, 2, NIMatching|NIPhysical)
	tgt := nis[1]
	q := mustEQ(t, tgt)
	idx := mustPT(t, tgt, 0, q)
	m := mustME(t, tgt, idx, MESpec{Start: make([]byte, 64<<10), UID: UIDAny, Options: MEOpPut | MEEventLinkDisable,
		MatchID: anyProc(), MatchBits: 1}, PriorityList, 5)
	pr := mustPeer(t, tgt, nis[0])
	pushedRequest(t, tgt, pr, idx, 64<<10)
	if err := m.Unlink(); ErrnoOf(err) != InUse {
		t.Fatalf("unlink with a pushed put in flight: %v, want IN_USE", err)
	}
	tgt.peerFailed(pr)
	ev := waitEvent(t, q)
	if ev.Type != eq.EventPut || ev.NIFail != eq.NIUndeliverable {
		t.Fatalf("event %+v, want a PUT failed NI_UNDELIVERABLE", ev)
	}
	tgt.mu.Lock()
	n := len(tgt.tops)
	tgt.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d target operations left", n)
	}
	if err := m.Unlink(); err != nil {
		t.Fatalf("unlink after the failure: %v", err)
	}
}

// TestPushStrayHalves: a FIN that names no pushed put of ours is counted
// malformed and changes nothing; a FIN from another peer than the put's does not
// complete it; a CTS that names no operation of ours is answered with a failed
// FIN, so its target does not wait for ever.
func TestPushStrayHalves(t *testing.T) {
	// No progress goroutines: nis[0] must not answer the CTS (with a failed FIN,
	// no put of its own having that id) before the test looks at the operation.
	testNoHelpers.Store(true)
	t.Cleanup(func() { testNoHelpers.Store(false) })
	nis := newNIs(t, 3, NIMatching|NIPhysical)
	tgt := nis[1]
	q := mustEQ(t, tgt)
	idx := mustPT(t, tgt, 0, q)
	mustME(t, tgt, idx, MESpec{Start: make([]byte, 64<<10), UID: UIDAny, Options: MEOpPut | MEEventLinkDisable,
		MatchID: anyProc(), MatchBits: 1}, PriorityList, 5)
	pr := mustPeer(t, tgt, nis[0])
	other := mustPeer(t, tgt, nis[2])
	top := pushedRequest(t, tgt, pr, idx, 64<<10)
	bad := tgt.status[SRMalformed].Load()
	tgt.handleRequest(pr, &header{kind: msgFin, hdrData: top.id + 1000}, nil)
	tgt.handleRequest(other, &header{kind: msgFin, hdrData: top.id}, nil)
	if got := tgt.status[SRMalformed].Load() - bad; got != 2 {
		t.Fatalf("%d stray FINs counted malformed, want 2", got)
	}
	tgt.mu.Lock()
	live := tgt.tops[top.id] == top
	tgt.mu.Unlock()
	if !live {
		t.Fatal("a stray FIN completed the operation")
	}
	// The real FIN, failed: the put's event says so.
	tgt.handleRequest(pr, &header{kind: msgFin, hdrData: top.id, fail: uint8(eq.NIUndeliverable)}, nil)
	if ev := waitEvent(t, q); ev.Type != eq.EventPut || ev.NIFail != eq.NIUndeliverable {
		t.Fatalf("event %+v, want a failed PUT", ev)
	}

	// A CTS for an operation the initiator does not have: a failed FIN goes back,
	// which the target (no pushed put 9 there) counts malformed. (nis[2]: nis[0]
	// has the ACK of the failed put above coming, itself malformed there.)
	init := nis[2]
	ipr := mustPeer(t, init, tgt)
	bad = init.status[SRMalformed].Load()
	tbad := tgt.status[SRMalformed].Load()
	seg := make([]byte, 16)
	putSeg(seg, mdreg.RemoteSegment{Addr: 0x1000, Len: 4096, RKey: 1})
	init.handleRequest(ipr, &header{kind: msgCTS, opid: 12345, hdrData: 9, mlength: 4096}, seg)
	if init.status[SRMalformed].Load()-bad != 1 {
		t.Fatal("a stray CTS is not counted malformed")
	}
	for i := 0; tgt.status[SRMalformed].Load() == tbad; i++ {
		if i == 1e7 {
			t.Fatal("no failed FIN reached the target")
		}
		tgt.progressOnce(true)
		init.progressOnce(true)
	}
}
