package soft

import (
	"testing"
	"time"

	"github.com/goportals/goportals/internal/verbs"
)

// TestPollRoundLocksOnce: a round that polls messages and then completions
// (PollRound) takes the context's progress lock at most once, where PollMessages
// followed by Poll takes it twice; it finds what they find.
func TestPollRoundLocksOnce(t *testing.T) {
	p := msgPair(t, 64)
	q := p.B.CQ.(*cq)
	h := func(uint64, []byte) bool { t.Error("a message on an idle pair"); return false }
	var wc [4]verbs.WorkCompletion
	countProgLocks = true
	defer func() { countProgLocks = false }()
	const rounds = 200
	progLocks.Store(0)
	for i := 0; i < rounds; i++ {
		if m, n, err := q.PollRound(h, 16, wc[:]); m != 0 || n != 0 || err != nil {
			t.Fatalf("idle round: %d messages, %d completions, %v", m, n, err)
		}
	}
	if got := progLocks.Load(); got > rounds || got == 0 {
		t.Fatalf("%d rounds took the progress lock %d times", rounds, got)
	}
	progLocks.Store(0)
	for i := 0; i < rounds; i++ {
		q.PollMessages(h, 16)
		stopIfFailed(t)
		q.Poll(wc[:])
	}
	if got := progLocks.Load(); got <= rounds {
		t.Fatalf("PollMessages then Poll: %d rounds took the progress lock %d times (the count misses some)", rounds, got)
	}
}

// TestPollRoundMixed: messages and SENDs that are not messages (longer than the
// message size, into posted receives) all arrive through PollRound, the messages
// in order and each receive completed once.
func TestPollRoundMixed(t *testing.T) {
	const maxLen = 64
	p := msgPair(t, maxLen)
	q := p.B.CQ.(*cq)
	long := make([]byte, 200)
	rbuf := p.B.Reg(t, 256, verbs.AccessLocalWrite, 0)
	got, recvs := 0, 0
	h := func(_ uint64, b []byte) bool { checkNumbered(t, b, got); got++; return true }
	var wc [8]verbs.WorkCompletion
	poll := func() {
		m, n, err := q.PollRound(h, 16, wc[:])
		if err != nil {
			t.Fatal(err)
		}
		if m > 0 && n > 0 {
			t.Fatalf("a round handed out %d messages and %d completions", m, n)
		}
		for _, w := range wc[:n] {
			if w.Status != verbs.StatusSuccess || w.Opcode != verbs.WCRecv || w.ByteLen != uint32(len(long)) {
				t.Fatalf("completion %+v", w)
			}
			recvs++
		}
		p.A.CQ.Poll(wc[:])
	}
	const n = 300
	msg := make([]byte, 8)
	posted := 0
	for i := 0; i < n; i++ {
		numbered(msg, i)
		sendMsg(t, p, msg, poll)
		if i%10 == 0 {
			p.B.PostRecv(t, uint64(i), rbuf.SGE(0, 256))
			for p.A.QP.PostSend([]verbs.SendWR{{Opcode: verbs.OpSend, Flags: verbs.SendInline,
				SG: []verbs.SGE{{Addr: addrOfBytes(long), Length: uint32(len(long))}}}}) != nil {
				poll()
			}
			posted++
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for (got < n || recvs < posted) && time.Now().Before(deadline) {
		poll()
	}
	if got != n || recvs != posted {
		t.Fatalf("%d of %d messages, %d of %d receives", got, n, recvs, posted)
	}
}

// TestPollRoundHandsOutWhatItsRoundFound: a message that lands while PollRound
// runs its progress round (after it looked for messages) is handed out by the
// same call, not left for the next one: the drain stops at it and says so
// (msgReady), and PollRound looks again.
func TestPollRoundHandsOutWhatItsRoundFound(t *testing.T) {
	p := msgPair(t, 64)
	q := p.B.CQ.(*cq)
	msg := make([]byte, 8)
	numbered(msg, 0)
	got := 0
	h := func(_ uint64, b []byte) bool { checkNumbered(t, b, got); got++; return true }
	messageDuringRound(t, p.A.QP.(verbs.MessageSender), q, msg, h)
	if got != 1 {
		t.Fatalf("%d messages", got)
	}
}

// TestPollRoundLeavesNoStaleReady: when the message PollRound hands out was the
// only thing that arrived, the completion queue does not say afterwards that
// something is ready (Wait would return at once, for nothing). The message
// lands during the call's progress round, the case where a drain stopped at it
// and told the queue.
func TestPollRoundLeavesNoStaleReady(t *testing.T) {
	p := msgPair(t, 64)
	q := p.B.CQ.(*cq)
	msg := make([]byte, 8)
	h := func(uint64, []byte) bool { return true }
	messageDuringRound(t, p.A.QP.(verbs.MessageSender), q, msg, h)
	if q.ready() {
		t.Fatal("the queue says something is ready after its only message was handed out")
	}
}

// TestPollRoundReceiveBeforeLaterMessage: a SEND that is not a message (into a
// posted receive) and a message behind it on the same queue pair reach the
// consumer of PollRound in that order, as they would through PollMessages then
// Poll, even when both land during the call's progress round: the round
// completes the receive and stops at the message, and the call hands out the
// completion, not the message that came after it.
func TestPollRoundReceiveBeforeLaterMessage(t *testing.T) {
	const maxLen = 64
	p := msgPair(t, maxLen)
	q := p.B.CQ.(*cq)
	long := make([]byte, 200)
	msg := make([]byte, 8)
	rbuf := p.B.Reg(t, 256, verbs.AccessLocalWrite, 0)
	p.B.PostRecv(t, 1, rbuf.SGE(0, 256))
	var order []string
	h := func(uint64, []byte) bool { order = append(order, "message"); return true }
	testBeforeRound = func() {
		testBeforeRound = nil
		if err := p.A.QP.PostSend([]verbs.SendWR{{Opcode: verbs.OpSend, Flags: verbs.SendInline,
			SG: []verbs.SGE{{Addr: addrOfBytes(long), Length: uint32(len(long))}}}}); err != nil {
			t.Error(err)
		}
		if err := p.A.QP.(verbs.MessageSender).SendMessage(msg); err != nil {
			t.Error(err)
		}
	}
	defer func() { testBeforeRound = nil }()
	var wc [4]verbs.WorkCompletion
	for i := 0; len(order) < 2; i++ {
		if i == 1e6 {
			t.Fatalf("after %d calls: %v", i, order)
		}
		_, n, err := q.PollRound(h, 16, wc[:])
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range wc[:n] {
			if w.Status != verbs.StatusSuccess || w.Opcode != verbs.WCRecv {
				t.Fatalf("completion %+v", w)
			}
			order = append(order, "receive")
		}
		p.A.CQ.Poll(wc[:])
	}
	if order[0] != "receive" || order[1] != "message" {
		t.Fatalf("handed out in the order %v, want the receive, then the message", order)
	}
}

// TestPollRoundAllocatesNothing: a message sent and handed out through PollRound,
// and an idle PollRound, allocate nothing.
func TestPollRoundAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates on its own")
	}
	p := msgPair(t, 64)
	q := p.B.CQ.(*cq)
	ms := p.A.QP.(verbs.MessageSender)
	b := make([]byte, 48)
	h := func(uint64, []byte) bool { return true }
	var wc [4]verbs.WorkCompletion
	once := func() {
		for ms.SendMessage(b) != nil {
			q.PollRound(h, 16, wc[:])
		}
		for m, _, _ := q.PollRound(h, 16, wc[:]); m == 0; m, _, _ = q.PollRound(h, 16, wc[:]) {
		}
		q.PollRound(h, 16, wc[:])
	}
	for i := 0; i < 100; i++ {
		once()
	}
	if n := testing.AllocsPerRun(1000, once); n != 0 {
		t.Fatalf("%v allocations per message", n)
	}
}

// messageDuringRound has ms send msg from inside the progress round of a
// PollRound on q (h its consumer), calling PollRound until one ran its round,
// and fails the test unless that call handed out exactly one message.
func messageDuringRound(t *testing.T, ms verbs.MessageSender, q *cq, msg []byte, h verbs.MessageHandler) {
	t.Helper()
	testBeforeRound = func() {
		testBeforeRound = nil
		if err := ms.SendMessage(msg); err != nil {
			t.Error(err)
		}
	}
	defer func() { testBeforeRound = nil }()
	var wc [4]verbs.WorkCompletion
	for i := 0; testBeforeRound != nil; i++ {
		// (the context's progress goroutine may hold the lock: PollRound then
		// skips its round)
		if i == 1e6 {
			t.Fatal("PollRound never ran its progress round")
		}
		m, _, err := q.PollRound(h, 16, wc[:])
		if err != nil {
			t.Fatal(err)
		}
		if testBeforeRound == nil && m != 1 {
			t.Fatalf("the call during which the message landed handed out %d messages", m)
		}
	}
}
