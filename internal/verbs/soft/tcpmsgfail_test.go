package soft

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/goportals/goportals/internal/verbs"
)

// TestTCPMessageAfterWriteAnswer: the receiver's signaled WRITE is answered by
// the peer, which then sends a message: the WRITE's completion (same
// completion queue) goes to the consumer before the message, even when both
// arrived before the consumer polled.
func TestTCPMessageAfterWriteAnswer(t *testing.T) {
	p := tcpMsgPair(t, 16)
	dst := p.A.Reg(t, 64, rwx, 0)
	src := p.B.Reg(t, 64, rwx, 0)
	src.Mem[7] = 42
	al := p.A.QP.(*qp).link
	bq := p.B.QP.(*qp)
	l := bq.link
	q := p.B.CQ.(*cq)
	for round := 0; round < 3; round++ {
		src.Mem[7] = byte(42 + round)
		if err := p.B.QP.PostSend([]verbs.SendWR{{ID: 5, Opcode: verbs.OpRDMAWrite, Flags: verbs.SendSignaled,
			SG: []verbs.SGE{src.SGE(0, 8)}, RemoteAddr: dst.Addr(0), RKey: dst.MR.RKey()}}); err != nil {
			t.Fatal(err)
		}
		var wc [4]verbs.WorkCompletion
		deadline := time.Now().Add(10 * time.Second)
		landed := func() bool {
			// (the receive side writes it with rxMu held)
			al.rxMu.Lock()
			defer al.rxMu.Unlock()
			return dst.Mem[7] == byte(42+round)
		}
		for !landed() {
			if time.Now().After(deadline) {
				t.Fatal("the WRITE did not land")
			}
			p.A.CQ.Poll(wc[:])
		}
		if err := p.A.QP.(verbs.MessageSender).SendMessage([]byte("m")); err != nil {
			t.Fatal(err)
		}
		for !l.msgHeld.Load() {
			if time.Now().After(deadline) {
				t.Fatal("the message did not arrive")
			}
			bq.ctx.pollLinks()
		}
		var order []string
		h := func(_ uint64, b []byte) bool { order = append(order, "msg:"+string(b)); return true }
		for len(order) < 2 && time.Now().Before(deadline) {
			_, k, err := q.PollRound(h, 4, wc[:])
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range wc[:k] {
				order = append(order, fmt.Sprintf("write%d:%v", w.ID, w.Status))
			}
		}
		if want := fmt.Sprintf("[write5:%v msg:m]", verbs.StatusSuccess); fmt.Sprint(order) != want {
			t.Fatalf("round %d: order %v, want %s", round, order, want)
		}
	}
}

// TestTCPMessageHeldWhilePollFindsNone: a PollMessages that found no message
// clears the queue's readiness; a message the poller holds meanwhile (after the
// look, before the clear) must leave it set, or Wait sleeps with a message
// held and the poller no longer watching the socket.
func TestTCPMessageHeldWhilePollFindsNone(t *testing.T) {
	p := tcpMsgPair(t, 16)
	ms := p.A.QP.(verbs.MessageSender)
	q := p.B.CQ.(*cq)
	l := p.B.QP.(*qp).link
	got := 0
	h := func(uint64, []byte) bool { got++; return false }
	if err := ms.SendMessage([]byte("a")); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for got == 0 && time.Now().Before(deadline) {
		q.PollMessages(h, 4)
	}
	ran := false
	testAfterMessages = func() {
		testAfterMessages = nil
		ran = true
		if err := ms.SendMessage([]byte("b")); err != nil {
			t.Error(err)
			return
		}
		for !l.msgHeld.Load() && time.Now().Before(deadline) {
			l.pollRx() // (or the poller's)
		}
	}
	defer func() { testAfterMessages = nil }()
	// (A PollMessages that finds the context's goroutine in a round of its own
	// makes no look and runs no hook: under load, try again.)
	for i := 0; !ran; i++ {
		if i == 1e6 {
			t.Fatal("PollMessages never looked")
		}
		if k, _ := q.PollMessages(h, 4); k != 0 {
			t.Fatalf("%d messages handed out, want 0 (the second came after the look)", k)
		}
	}
	if !l.msgHeld.Load() {
		t.Fatal("the second message was not held")
	}
	if !q.ready() {
		t.Fatal("a message is held but the completion queue says nothing is ready")
	}
	// (As above: a poll that finds the context's goroutine in a round hands
	// out nothing; under load, poll again.)
	k := 0
	for i := 0; k == 0 && i < 1e6; i++ {
		k, _ = q.PollMessages(h, 4)
	}
	if k != 1 || got != 2 {
		t.Fatalf("%d messages handed out, %d in all", k, got)
	}
}

// TestTCPHeldMessagesDroppedOnDestroy: a link that failed with a message held
// stays in the context's links for it; destroying its queue pair drops it.
func TestTCPHeldMessagesDroppedOnDestroy(t *testing.T) {
	p := tcpMsgPair(t, 16)
	if err := p.A.QP.(verbs.MessageSender).SendMessage([]byte("x")); err != nil {
		t.Fatal(err)
	}
	bq := p.B.QP.(*qp)
	l := bq.link
	deadline := time.Now().Add(10 * time.Second)
	for !l.msgHeld.Load() {
		if time.Now().After(deadline) {
			t.Fatal("the message did not arrive")
		}
		bq.ctx.pollLinks()
	}
	l.broken(errors.New("test: the link failed"))
	linked := func() bool {
		for _, x := range *bq.ctx.links.Load() {
			if x == l {
				return true
			}
		}
		return false
	}
	if !linked() {
		t.Fatal("the failed link with a message held left the context's links")
	}
	if err := p.B.QP.Close(); err != nil {
		t.Fatal(err)
	}
	if linked() {
		t.Fatal("the destroyed queue pair's link stays in the context's links")
	}
}
