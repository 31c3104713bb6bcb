package soft

import (
	"testing"
	"time"

	"github.com/goportals/goportals/internal/verbs"
)

// TestMessagesBeforePeerExit: a peer process that sent a message, a SEND
// longer than a message and another message, then was killed: the queue pair
// fails only after the longer SEND completed its receive and the last message
// was handed out, even when the exit is noticed just after a PollMessages
// handed out the first message and stopped at the SEND (the progress
// goroutine's peer check waits for the progress lock while the test holds it,
// as a PollMessages would).
func TestMessagesBeforePeerExit(t *testing.T) {
	c, s := startChildMessages(t, "", 64)
	messageSendMessage(t, c, s)
	q := s.qp.(*qp)
	var got []int
	h := func(tag uint64, b []byte) bool {
		got = append(got, len(b))
		return true
	}
	s.ctx.progMu.Lock()
	c.kill()
	if err := c.waitExit(10 * time.Second); err != nil {
		s.ctx.progMu.Unlock()
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // the progress goroutine's peer check now waits for the lock
	if k, _ := q.pollMessages(h, 2); k != 1 {
		s.ctx.progMu.Unlock()
		t.Fatalf("%d messages handed out before the SEND, want 1", k)
	}
	s.ctx.progMu.Unlock()
	time.Sleep(20 * time.Millisecond) // (the peer check takes the lock first, as when nobody polls at once)
	status := map[uint64]verbs.Status{}
	var wc [4]verbs.WorkCompletion
	deadline := time.Now().Add(10 * time.Second)
	for len(status) < 2 && time.Now().Before(deadline) {
		k, _ := s.cq.Poll(wc[:])
		for _, w := range wc[:k] {
			status[w.ID] = w.Status
		}
		s.cq.(verbs.MessageCQ).PollMessages(h, 4)
	}
	if status[9] != verbs.StatusSuccess || len(got) != 2 || status[10] != verbs.StatusWorkRequestFlushed {
		t.Fatalf("receives %v, messages of %v bytes; want receive 9 done, 2 messages, then receive 10 flushed", status, got)
	}
}

// messageSendMessage posts receives 9 and 10 (256 bytes each) at s, then has
// the child c send a message, a SEND longer than a message (it takes receive
// 9) and another message.
func messageSendMessage(t *testing.T, c *child, s *side) {
	t.Helper()
	rbuf := make([]byte, 512)
	rm := regLocal(t, s, rbuf, rw)
	if err := s.qp.PostRecv([]verbs.RecvWR{{ID: 9, SG: sge(rm, 256)}}); err != nil {
		t.Fatal(err)
	}
	if err := s.qp.PostRecv([]verbs.RecvWR{{ID: 10, SG: []verbs.SGE{{Addr: rm.Addr() + 256, Length: 256, LKey: rm.LKey()}}}}); err != nil {
		t.Fatal(err)
	}
	c.reg("b", 256, rw, 5)
	c.do("send b 8")   // a message
	c.do("send b 200") // not a message: it takes receive 9
	c.do("send b 8")   // a message
}
