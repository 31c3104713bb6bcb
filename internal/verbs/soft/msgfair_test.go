package soft

import (
	"testing"

	"github.com/goportals/goportals/internal/verbs"
	"github.com/goportals/goportals/internal/verbs/verbstest"
)

// msgPairs returns a pair whose B side is in message mode and a second
// connection between the same two contexts, also in message mode on B, whose
// queue pairs share each side's completion queue. It returns the senders and
// the receiving queue pairs, in the order they were connected.
func msgPairs(t *testing.T) (p *verbstest.Pair, send [2]verbs.MessageSender, recv [2]*qp) {
	t.Helper()
	p = msgPair(t, 64)
	a2, err := p.A.PD.CreateQP(verbs.QPAttr{SendCQ: p.A.CQ, RecvCQ: p.A.CQ, MaxSendWR: 64, MaxRecvWR: 64, MaxSGE: 1})
	if err != nil {
		t.Fatal(err)
	}
	b2, err := p.B.PD.CreateQP(verbs.QPAttr{SendCQ: p.B.CQ, RecvCQ: p.B.CQ, MaxSendWR: 64, MaxRecvWR: 64, MaxSGE: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := b2.(verbs.MessageQP).EnableMessages(8, 64); err != nil {
		t.Fatal(err)
	}
	if err := a2.Connect(b2.Address()); err != nil {
		t.Fatal(err)
	}
	if err := b2.Connect(a2.Address()); err != nil {
		t.Fatal(err)
	}
	send = [2]verbs.MessageSender{p.A.QP.(verbs.MessageSender), a2.(verbs.MessageSender)}
	recv = [2]*qp{p.B.QP.(*qp), b2.(*qp)}
	return p, send, recv
}

// TestMessagesFairAcrossQueuePairs: while one queue pair keeps more messages
// waiting than a PollMessages call takes, another queue pair's message on the
// same completion queue is still handed out within a few calls: PollMessages
// does not always begin with the same queue pair.
func TestMessagesFairAcrossQueuePairs(t *testing.T) {
	for flood := 0; flood < 2; flood++ {
		p, send, _ := msgPairs(t)
		mc := p.B.CQ.(verbs.MessageCQ)
		const max = 4
		fill := func(k int) {
			for i := 0; i < k; i++ {
				if err := send[flood].SendMessage([]byte{1}); err != nil {
					t.Fatal(err)
				}
			}
		}
		fill(4 * max)
		if err := send[1-flood].SendMessage([]byte{2}); err != nil {
			t.Fatal(err)
		}
		other := false
		h := func(tag uint64, b []byte) bool {
			if b[0] == 2 {
				other = true
			}
			return true
		}
		for call := 0; !other; call++ {
			if call == 10 {
				t.Fatalf("flooding connection %d: the other connection's message waited %d calls", flood, call)
			}
			for {
				if k, err := mc.PollMessages(h, max); err != nil {
					t.Fatal(err)
				} else if k > 0 {
					break
				}
			}
			fill(max) // the flood keeps as many waiting as a call takes
		}
	}
}
