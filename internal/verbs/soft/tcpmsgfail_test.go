package soft

import (
	"errors"
	"fmt"
	"testing"
	"time"

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
	for _, m := range []string{"one", "two"} {
		if err := ms.SendMessage([]byte(m)); err != nil {
			t.Fatal(err)
		}
	}
	bq := p.B.QP.(*qp)
	l := bq.link
	deadline := time.Now().Add(10 * time.Second)
	for {
		l.rxMu.Lock()
		whole := l.msgHeld.Load() && l.rbW-l.rbR >= 3+frameLen+3
		l.rxMu.Unlock()
		if whole {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the messages did not arrive")
		}
		bq.ctx.pollLinks()
	}
	l.broken(errors.New("test: the link failed"))
	var order []string
	h := func(_ uint64, b []byte) bool { order = append(order, string(b)); return true }
	q := p.B.CQ.(*cq)
	var wc [4]verbs.WorkCompletion
	for len(order) < 3 && time.Now().Before(deadline) {
		_, k, err := q.PollRound(h, 1, wc[:])
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range wc[:k] {
			order = append(order, fmt.Sprintf("recv%d:%v", w.ID, w.Status))
		}
	}
	if want := fmt.Sprintf("[one two recv10:%v]", verbs.StatusWorkRequestFlushed); fmt.Sprint(order) != want {
		t.Fatalf("order %v, want %s", order, want)
	}
	if bq.State() != verbs.QPError {
		t.Fatalf("queue pair state %v, want error", bq.State())
	}
}
