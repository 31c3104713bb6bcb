package soft

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/goportals/goportals/internal/verbs"
)

// TestTCPMessagesHeldWhenLinkFails: two messages wait whole in the receiver's
// staging buffer when its link fails (as when a write to a peer that exited
// fails): both are still handed out, in order, and only then is the failure
// reported (the posted receive completes flushed).
func TestTCPMessagesHeldWhenLinkFails(t *testing.T) {
	p := tcpMsgPair(t, 16)
	dst := p.B.Reg(t, 64, rwx, 0)
	if err := p.B.QP.PostRecv([]verbs.RecvWR{{ID: 10, SG: []verbs.SGE{dst.SGE(0, 64)}}}); err != nil {
		t.Fatal(err)
	}
	ms := p.A.QP.(verbs.MessageSender)
	bq := p.B.QP.(*qp)
	l := bq.link
	l.rxMu.Lock() // nothing is received until both are in the socket
	for _, m := range []string{"one", "two"} {
		if err := ms.SendMessage([]byte(m)); err != nil {
			l.rxMu.Unlock()
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	stageHeld(t, bq, 2*(frameLen+3), 3+frameLen+3, deadline, "the messages did not arrive")
	l.broken(errors.New("test: the link failed"))
	order := pollOrder(t, p.B.CQ.(*cq), 1, 3, deadline)
	if want := fmt.Sprintf("[one two recv10:%v]", verbs.StatusWorkRequestFlushed); fmt.Sprint(order) != want {
		t.Fatalf("order %v, want %s", order, want)
	}
	if bq.State() != verbs.QPError {
		t.Fatalf("queue pair state %v, want error", bq.State())
	}
}

// TestTCPFramesBehindHeldMessagesWhenLinkFails: a message, a SEND longer than
// a message and another message, all whole in the receiver's staging buffer
// when its link fails: the first message, the SEND's receive and the second
// message go to the consumer in that order, then the failure (the second
// receive flushed), as over shared memory.
func TestTCPFramesBehindHeldMessagesWhenLinkFails(t *testing.T) {
	p := tcpMsgPair(t, 16)
	dst := p.B.Reg(t, 128, rwx, 0)
	for i := 0; i < 2; i++ {
		if err := p.B.QP.PostRecv([]verbs.RecvWR{{ID: uint64(10 + i), SG: []verbs.SGE{dst.SGE(64*i, 64)}}}); err != nil {
			t.Fatal(err)
		}
	}
	src := p.A.Reg(t, 64, rwx, 0)
	bq := p.B.QP.(*qp)
	l := bq.link
	total := 3 + frameLen + 40 + frameLen + 3 + frameLen
	l.rxMu.Lock() // nothing is received until all three are in the socket
	ms := p.A.QP.(verbs.MessageSender)
	if err := ms.SendMessage([]byte("one")); err != nil {
		l.rxMu.Unlock()
		t.Fatal(err)
	}
	if err := p.A.QP.PostSend([]verbs.SendWR{{Opcode: verbs.OpSend, SG: []verbs.SGE{src.SGE(0, 40)}}}); err != nil {
		l.rxMu.Unlock()
		t.Fatal(err)
	}
	if err := ms.SendMessage([]byte("two")); err != nil {
		l.rxMu.Unlock()
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	stageHeld(t, bq, total, total-frameLen, deadline, "the frames did not arrive")
	l.broken(errors.New("test: the link failed"))
	order := pollOrder(t, p.B.CQ.(*cq), 4, 4, deadline)
	if want := fmt.Sprintf("[one recv10:%v two recv11:%v]", verbs.StatusSuccess, verbs.StatusWorkRequestFlushed); fmt.Sprint(order) != want {
		t.Fatalf("order %v, want %s", order, want)
	}
}

// TestTCPKeptLinkReleasesPartialWrite: behind a message held when the link
// fails, the staging buffer holds the start of a WRITE whose payload never
// comes: serving what the buffer holds must not leave the WRITE's target
// region held.
func TestTCPKeptLinkReleasesPartialWrite(t *testing.T) {
	p := tcpMsgPair(t, 16)
	const size = 256 << 10
	dst := p.B.Reg(t, size, rwx, 0)
	src := p.A.Reg(t, size, rwx, 0)
	bq := p.B.QP.(*qp)
	l := bq.link
	l.rxMu.Lock() // nothing is received until the message and the WRITE's start are in the socket
	if err := p.A.QP.(verbs.MessageSender).SendMessage([]byte("one")); err != nil {
		l.rxMu.Unlock()
		t.Fatal(err)
	}
	if err := p.A.QP.PostSend([]verbs.SendWR{{Opcode: verbs.OpRDMAWrite, SG: []verbs.SGE{src.SGE(0, size)},
		RemoteAddr: dst.Addr(0), RKey: dst.MR.RKey()}}); err != nil {
		l.rxMu.Unlock()
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	stageHeld(t, bq, 2*frameLen+3+8, 3+frameLen, deadline, "the frames did not arrive")
	l.broken(errors.New("test: the link failed"))
	q := p.B.CQ.(*cq)
	got := 0
	h := func(uint64, []byte) bool { got++; return true }
	var wc [4]verbs.WorkCompletion
	for got == 0 && time.Now().Before(deadline) {
		q.PollRound(h, 4, wc[:])
	}
	if got != 1 {
		t.Fatalf("%d messages", got)
	}
	key := dst.MR.(*mr).key
	if n := atomic.LoadInt32(bq.ctx.view.i32(entryOff(key&mrIdxMask) + eInflight)); n != 0 {
		t.Fatalf("the WRITE's target is held %d times after the link failed", n)
	}
}

// stageHeld is called with bq's link's rxMu held (so nothing is received
// meanwhile): it waits until the link's socket holds inSocket bytes (or the
// deadline passes), lets go of rxMu, then runs link rounds until a message is
// held and the staging buffer holds at least staged bytes; at the deadline it
// fails the test with late.
func stageHeld(t *testing.T, bq *qp, inSocket, staged int, deadline time.Time, late string) {
	t.Helper()
	l := bq.link
	for {
		n, err := unix.IoctlGetInt(l.fd, unix.SIOCINQ)
		if err != nil || n >= inSocket || time.Now().After(deadline) {
			break
		}
	}
	l.rxMu.Unlock()
	for {
		l.rxMu.Lock()
		whole := l.msgHeld.Load() && l.rbW-l.rbR >= staged
		l.rxMu.Unlock()
		if whole {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal(late)
		}
		bq.ctx.pollLinks()
	}
}

// pollOrder calls q's PollRound, at most budget messages a call, until it has
// handed out n things or the deadline passed, and returns what it handed out
// in order: a message as its text, a completion as recv<ID>:<status>.
func pollOrder(t *testing.T, q *cq, budget, n int, deadline time.Time) []string {
	t.Helper()
	var order []string
	h := func(_ uint64, b []byte) bool { order = append(order, string(b)); return true }
	var wc [4]verbs.WorkCompletion
	for len(order) < n && time.Now().Before(deadline) {
		_, k, err := q.PollRound(h, budget, wc[:])
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range wc[:k] {
			order = append(order, fmt.Sprintf("recv%d:%v", w.ID, w.Status))
		}
	}
	return order
}
