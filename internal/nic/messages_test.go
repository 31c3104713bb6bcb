package nic

import (
	"fmt"
	"strings"
	"testing"

	"github.com/goportals/goportals/internal/verbs"
)

// msgTranscript runs a mix of operations between two NIs (short and long puts
// with acks, a put that matches nothing, short and long gets, an atomic) and
// returns what both sides saw: every event's type, failure, lengths, offset and
// match bits, the counters, and the data.
func msgTranscript(t *testing.T) (string, []*NI) {
	t.Helper()
	nis := newNIs(t, 2, NIMatching|NIPhysical)
	tq, tct := ruleTarget(t, nis[1], make([]byte, 1<<17), nil)
	iq, err := nis[0].EQAlloc(256)
	if err != nil {
		t.Fatal(err)
	}
	ict, err := nis[0].CTAlloc()
	if err != nil {
		t.Fatal(err)
	}
	src := make([]byte, 1<<17)
	fill(src, 3)
	m, err := nis[0].MDBind(MDSpec{Start: src, EQ: iq, CT: ict, Options: MDEventCTAck | MDEventCTReply})
	if err != nil {
		t.Fatal(err)
	}
	dst, _ := nis[1].PhysID()
	var out strings.Builder
	ev := func(who string, q *EQ) {
		t.Helper()
		e := waitEvent(t, q)
		fmt.Fprintf(&out, "%s %v fail=%v r=%d m=%d off=%d bits=%#x pt=%d\n", who, e.Type, e.NIFail,
			e.RLength, e.MLength, e.RemoteOffset, e.MatchBits, e.PTIndex)
	}
	step := func(name string, err error, initEvents, targetEvents int) {
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		fmt.Fprintf(&out, "-- %s\n", name)
		for i := 0; i < initEvents; i++ {
			ev("init", iq)
		}
		for i := 0; i < targetEvents; i++ {
			ev("target", tq)
		}
	}
	step("put 8", Put(m, 0, 8, AckReqFull, dst, 4, 0x42, 0, 0, 0), 2, 1)
	step("put long", Put(m, 0, 40000, AckReqFull, dst, 4, 0x42, 64, 0, 0), 2, 1)
	step("put no match", Put(m, 0, 8, AckReqFull, dst, 4, 0x43, 0, 0, 0), 2, 0)
	step("get 8", Get(m, 100, 8, dst, 4, 0x42, 0, 0), 1, 1)
	step("get long", Get(m, 1000, 40000, dst, 4, 0x42, 64, 0), 1, 1)
	step("atomic", Atomic(m, 0, 8, AckReqFull, dst, 4, 0x42, 8, 0, 0, OpSum, Uint64), 2, 1)
	fmt.Fprintf(&out, "target ct %+v\ninit ct %+v\n", waitCT(t, tct, 5), waitCT(t, ict, 6))
	fmt.Fprintf(&out, "data %x\n", src[:2048])
	noEvent(t, iq)
	noEvent(t, tq)
	return out.String(), nis
}

// TestMessagesSameAsWorkRequests: with the provider's message mode the engine
// reports exactly what it reports over posted receives and completions, and it
// does use the mode (its connections send messages and no receive completes).
func TestMessagesSameAsWorkRequests(t *testing.T) {
	testNoMessages = true
	defer func() { testNoMessages = false }()
	want, nis := msgTranscript(t)
	testNoMessages = false
	for _, ni := range nis {
		if ni.mcq != nil {
			t.Fatal("message mode on with testNoMessages")
		}
	}
	got, nis := msgTranscript(t)
	for _, ni := range nis {
		if ni.mcq == nil {
			t.Fatal("the soft provider's message mode is not used")
		}
		for _, pr := range ni.peerList() {
			if pr.msend == nil {
				t.Fatalf("a connection sends work requests only")
			}
		}
	}
	if got != want {
		t.Fatalf("with messages:\n%s\nwith work requests:\n%s", got, want)
	}
}

// countingCQ counts the polls of the completion queue.
type countingCQ struct {
	verbs.CQ
	polls int
}

func (c *countingCQ) Poll(wc []verbs.WorkCompletion) (int, error) {
	c.polls++
	return c.CQ.Poll(wc)
}

// countingRound counts the polls of the completion queue that a provider's
// PollRound makes (those that hand out no message).
type countingRound struct {
	*countingCQ
	r roundPoller
}

func (c *countingRound) PollRound(h verbs.MessageHandler, max int, wc []verbs.WorkCompletion) (int, int, error) {
	m, n, err := c.r.PollRound(h, max, wc)
	if err == nil && m == 0 {
		c.polls++
	}
	return m, n, err
}

// TestMessagesDoNotStarveCompletions: while messages keep coming, the engine
// still polls its completion queue at least once every msgRoundsMax rounds.
func TestMessagesDoNotStarveCompletions(t *testing.T) {
	testNoHelpers.Store(true) // no progress goroutine: this test drives the rounds
	defer testNoHelpers.Store(false)
	nis := newNIs(t, 2, NIMatching|NIPhysical)
	_, tct := ruleTarget(t, nis[1], make([]byte, 64), nil)
	m, err := nis[0].MDBind(MDSpec{Start: make([]byte, 8)})
	if err != nil {
		t.Fatal(err)
	}
	dst, _ := nis[1].PhysID()
	tni := nis[1]
	// Many messages queue in the target's ring: far more than a round takes.
	const n = 40 * 32
	for i := 0; i < n; i++ {
		if err := Put(m, 0, 8, NoAckReq, dst, 4, 0x42, 0, 0, 0); err != nil {
			t.Fatal(err)
		}
	}
	tni.progMu.Lock()
	cc := &countingCQ{CQ: tni.cq}
	tni.cq = cc
	if tni.rcq != nil {
		tni.rcq = &countingRound{countingCQ: cc, r: tni.rcq}
	}
	rounds, sincePoll := 0, 0
	for {
		v, _ := tct.Get()
		if v.Success >= n {
			break
		}
		before := cc.polls
		tni.progressLocked()
		rounds++
		if cc.polls == before {
			if sincePoll++; sincePoll > msgRoundsMax {
				tni.progMu.Unlock()
				t.Fatalf("%d rounds in a row without polling the completion queue", sincePoll)
			}
		} else {
			sincePoll = 0
		}
		if rounds > 100*n {
			tni.progMu.Unlock()
			t.Fatalf("the puts never all arrived")
		}
	}
	tni.cq = cc.CQ
	if r, ok := tni.rcq.(*countingRound); ok {
		tni.rcq = r.r
	}
	tni.progMu.Unlock()
	if cc.polls == 0 || rounds < n/32 {
		t.Fatalf("%d rounds, %d polls", rounds, cc.polls)
	}
}
