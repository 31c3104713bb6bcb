package soft

import (
	"errors"
	"fmt"
	"testing"
	"time"
	"unsafe"

	"github.com/goportals/goportals/internal/verbs"
	"github.com/goportals/goportals/internal/verbs/verbstest"
)

// TestTCPMessagesShared runs the message-mode tests that use only the verbs
// interface over TCP links (PTL_SOFT_PATH=tcp): every queue pair of msgPair
// connects over a TCP stream. Left out: the tests of shared-memory layout and
// of a message handed out in the very call during which it was sent
// (PollRoundHandsOutWhatItsRoundFound, PollRoundLeavesNoStaleReady): over TCP
// the frame may not have reached the receiver's socket when that call reads it,
// so they would pass or fail with the timing.
func TestTCPMessagesShared(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    func(*testing.T)
	}{
		{"MixedWithWorkRequests", TestMessagesMixedWithWorkRequests},
		{"Disabled", TestMessagesDisabled},
		{"EnableAfterConnect", TestEnableMessagesAfterConnect},
		{"WaitWakes", TestMessagesWaitWakes},
		{"HandlerDeregisters", TestMessageHandlerDeregisters},
		{"BeforePeerClose", TestMessagesBeforePeerClose},
		{"FairAcrossQueuePairs", TestMessagesFairAcrossQueuePairs},
		{"PollRacesFailingPost", TestMessagesPollRacesFailingPost},
		{"PollRoundLocksOnce", TestPollRoundLocksOnce},
		{"PollRoundMixed", TestPollRoundMixed},
		{"PollRoundReceiveBeforeLaterMessage", TestPollRoundReceiveBeforeLaterMessage},
		{"PollRoundAllocatesNothing", TestPollRoundAllocatesNothing},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(EnvPath, "tcp")
			tc.f(t)
		})
	}
}

// tcpMsgPair is msgPair over a TCP link.
func tcpMsgPair(t *testing.T, maxLen int) *verbstest.Pair {
	t.Helper()
	t.Setenv(EnvPath, "tcp")
	p := msgPair(t, maxLen)
	if path := p.A.QP.(*qp).Path(); path != "tcp" {
		t.Fatalf("path %q, want tcp", path)
	}
	return p
}

// TestTCPSendMessage: over a TCP link SendMessage sends at once, with no send
// completion and no request waiting for an answer, and the receiver hands the
// messages out in order from its staging buffer, with no posted receive and no
// completion; a SEND work request that is a message is handed out the same
// way and still completes at its sender.
func TestTCPSendMessage(t *testing.T) {
	const maxLen = 64
	p := tcpMsgPair(t, maxLen)
	ms := p.A.QP.(verbs.MessageSender)
	mc := p.B.CQ.(verbs.MessageCQ)
	al := p.A.QP.(*qp).link
	bl := p.B.QP.(*qp).link
	got := 0
	h := func(tag uint64, b []byte) bool {
		if tag != 7 {
			t.Errorf("tag %d", tag)
			return false
		}
		if checkNumbered(t, b, got); t.Failed() {
			return false
		}
		if len(b) > 0 && !inside(bl.rb, b) {
			t.Errorf("message %d not handed out in place", got)
			return false
		}
		got++
		return true
	}
	var wc [8]verbs.WorkCompletion
	sent := 0
	acomp := 0
	poll := func() {
		if k, _ := p.A.CQ.Poll(wc[:]); k > 0 {
			for _, w := range wc[:k] {
				if w.ID != 99 || w.Status != verbs.StatusSuccess {
					t.Fatalf("completion at the sender: %+v", w)
				}
			}
			acomp += k
		}
		mc.PollMessages(h, 16)
		stopIfFailed(t)
		if k, _ := p.B.CQ.Poll(wc[:]); k != 0 {
			t.Fatalf("completions at the receiver: %v", wc[:k])
		}
	}
	buf := make([]byte, maxLen)
	const n = 2000
	for ; sent < n; sent++ {
		b := buf[:(sent*13)%(maxLen+1)]
		numbered(b, sent)
		if sent%100 == 50 {
			for p.A.QP.PostSend([]verbs.SendWR{{ID: 99, Opcode: verbs.OpSend, Flags: verbs.SendInline | verbs.SendSignaled,
				SG: []verbs.SGE{{Addr: addrOfBytes(b), Length: uint32(len(b))}}}}) != nil {
				poll()
			}
			continue
		}
		for {
			err := ms.SendMessage(b)
			if err == nil {
				break
			}
			if !errors.Is(err, verbs.ErrNoResources) || sent == 0 {
				t.Fatalf("SendMessage %d: %v", sent, err)
			}
			poll()
		}
		if sent%7 == 0 {
			poll()
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for (got < n || acomp < n/100) && time.Now().Before(deadline) {
		poll()
	}
	if got != n || acomp != n/100 {
		t.Fatalf("%d of %d messages, %d of %d send completions", got, n, acomp, n/100)
	}
	al.pmu.Lock()
	left := len(al.pending)
	al.pmu.Unlock()
	if left != 0 {
		t.Fatalf("%d requests wait for an answer", left)
	}
}

// inside reports whether b lies in buf.
func inside(buf, b []byte) bool {
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(buf)))
	a := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return a >= lo && a+uintptr(len(b)) <= lo+uintptr(len(buf))
}

// TestTCPMessageOrderWithReceives: a SEND longer than a message, which takes a
// posted receive, then a message, then a SEND with immediate: the consumer
// polling messages first still sees the receive's completion, the message and
// the second receive's completion in that order.
func TestTCPMessageOrderWithReceives(t *testing.T) {
	p := tcpMsgPair(t, 16)
	dst := p.B.Reg(t, 256, rwx, 0)
	src := p.A.Reg(t, 256, rwx, 3)
	for i := 0; i < 2; i++ {
		if err := p.B.QP.PostRecv([]verbs.RecvWR{{ID: uint64(10 + i), SG: []verbs.SGE{dst.SGE(128*i, 128)}}}); err != nil {
			t.Fatal(err)
		}
	}
	q := p.B.CQ.(*cq)
	for round := 0; round < 3; round++ {
		if err := p.A.QP.PostSend([]verbs.SendWR{{Opcode: verbs.OpSend, SG: []verbs.SGE{src.SGE(0, 100)}}}); err != nil {
			t.Fatal(err)
		}
		if err := p.A.QP.(verbs.MessageSender).SendMessage([]byte("m")); err != nil {
			t.Fatal(err)
		}
		if err := p.A.QP.PostSend([]verbs.SendWR{{Opcode: verbs.OpSendWithImm, Imm: 5, SG: []verbs.SGE{src.SGE(0, 8)}}}); err != nil {
			t.Fatal(err)
		}
		var order []string
		h := func(_ uint64, b []byte) bool { order = append(order, "msg:"+string(b)); return true }
		var wc [4]verbs.WorkCompletion
		deadline := time.Now().Add(10 * time.Second)
		for len(order) < 3 && time.Now().Before(deadline) {
			_, k, err := q.PollRound(h, 16, wc[:])
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range wc[:k] {
				order = append(order, fmt.Sprintf("recv%d:%d", w.ID, w.ByteLen))
			}
			p.A.CQ.Poll(wc[:])
		}
		if want := "[recv10:100 msg:m recv11:8]"; fmt.Sprint(order) != want {
			t.Fatalf("round %d: order %v, want %s", round, order, want)
		}
		for i := 0; i < 2; i++ {
			if err := p.B.QP.PostRecv([]verbs.RecvWR{{ID: uint64(10 + i), SG: []verbs.SGE{dst.SGE(128*i, 128)}}}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestTCPSendMessageBehindFence: a fenced WRITE held behind an outstanding READ
// is not written yet, so SendMessage refuses (it would overtake it); once the
// READ is answered the WRITE goes, and a message sent then reaches the peer
// after the WRITE's data.
func TestTCPSendMessageBehindFence(t *testing.T) {
	p := tcpMsgPair(t, 64)
	ms := p.A.QP.(verbs.MessageSender)
	if err := ms.SendMessage([]byte("first")); err != nil {
		t.Fatalf("SendMessage on an idle link: %v", err)
	}
	src := p.A.Reg(t, 4096, rwx, 3)
	dst := p.B.Reg(t, 4096, rwx, 0)
	bl := p.B.QP.(*qp).link
	bl.rxMu.Lock() // B serves nothing for now: the READ stays outstanding
	locked := true
	defer func() {
		if locked {
			bl.rxMu.Unlock()
		}
	}()
	rd := verbs.SendWR{ID: 1, Opcode: verbs.OpRDMARead, Flags: verbs.SendSignaled, SG: []verbs.SGE{src.SGE(2048, 64)}, RemoteAddr: dst.Addr(2048), RKey: dst.MR.RKey()}
	wr := verbs.SendWR{ID: 2, Opcode: verbs.OpRDMAWrite, Flags: verbs.SendFence, SG: []verbs.SGE{src.SGE(0, 1024)}, RemoteAddr: dst.Addr(0), RKey: dst.MR.RKey()}
	if err := p.A.QP.PostSend([]verbs.SendWR{rd, wr}); err != nil {
		t.Fatal(err)
	}
	if err := ms.SendMessage([]byte("fin")); !errors.Is(err, verbs.ErrNoResources) {
		t.Fatalf("SendMessage behind a fenced WRITE: %v, want ErrNoResources", err)
	}
	bl.rxMu.Unlock()
	locked = false
	var wc [4]verbs.WorkCompletion
	var msgs []string
	h := func(_ uint64, b []byte) bool {
		if string(b) == "fin" && string(dst.Mem[:1024]) != string(src.Mem[:1024]) {
			t.Errorf("the message came before the WRITE's data")
			return false
		}
		msgs = append(msgs, string(b))
		return true
	}
	readDone := false
	deadline := time.Now().Add(10 * time.Second)
	for len(msgs) < 2 && time.Now().Before(deadline) {
		k, _ := p.A.CQ.Poll(wc[:])
		for _, w := range wc[:k] {
			if w.ID != 1 || w.Status != verbs.StatusSuccess {
				t.Fatalf("completion %+v", w)
			}
			readDone = true
			if err := ms.SendMessage([]byte("fin")); err != nil {
				t.Fatalf("SendMessage after the fence cleared: %v", err)
			}
		}
		p.B.CQ.(*cq).PollRound(h, 4, wc[:])
		stopIfFailed(t)
	}
	if !readDone || fmt.Sprint(msgs) != "[first fin]" {
		t.Fatalf("READ done %v, messages %v", readDone, msgs)
	}
}

// TestTCPMessagesBeforePeerExit: a peer process over TCP sent a message, a
// SEND longer than a message and another message, then was killed: the receive
// completes and both messages are handed out, in order, before the queue pair
// fails (the second receive then completes flushed).
func TestTCPMessagesBeforePeerExit(t *testing.T) {
	t.Setenv(EnvPath, "tcp")
	c, s := startChildMessages(t, "", 64)
	if path := s.qp.(*qp).Path(); path != "tcp" {
		t.Fatalf("path %q, want tcp", path)
	}
	messageSendMessage(t, c, s)
	c.kill()
	if err := c.waitExit(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	var order []string
	h := func(tag uint64, b []byte) bool {
		order = append(order, fmt.Sprintf("msg%d", len(b)))
		return true
	}
	q := s.cq.(*cq)
	var wc [4]verbs.WorkCompletion
	deadline := time.Now().Add(10 * time.Second)
	for len(order) < 4 && time.Now().Before(deadline) {
		_, k, _ := q.PollRound(h, 4, wc[:])
		for _, w := range wc[:k] {
			order = append(order, fmt.Sprintf("recv%d:%v", w.ID, w.Status == verbs.StatusSuccess))
		}
	}
	if want := "[msg8 recv9:true msg8 recv10:false]"; fmt.Sprint(order) != want {
		t.Fatalf("order %v, want %s", order, want)
	}
}

// BenchmarkTCPMessagePathSerial8B: an 8-byte message over a TCP link on one
// goroutine, as the engine sends and receives it: SendMessage (an inline SEND
// work request when it refuses), then PollRound on the receiver until it is
// handed out or completes a posted receive (reposted), and a poll of the
// sender's completion queue.
func BenchmarkTCPMessagePathSerial8B(b *testing.B) {
	b.Setenv(EnvPath, "tcp")
	p := msgPair(b, 64)
	q := p.B.CQ.(*cq)
	ms := p.A.QP.(verbs.MessageSender)
	rbuf := p.B.Reg(b, 64*64, rwx, 0)
	for i := 0; i < 64; i++ {
		if err := p.B.QP.PostRecv([]verbs.RecvWR{{ID: uint64(i), SG: []verbs.SGE{rbuf.SGE(64*i, 64)}}}); err != nil {
			b.Fatal(err)
		}
	}
	msg := make([]byte, 8)
	got := 0
	h := func(_ uint64, m []byte) bool { got++; return true }
	var wc [16]verbs.WorkCompletion
	once := func() {
		if ms.SendMessage(msg) != nil {
			for p.A.QP.PostSend([]verbs.SendWR{{Opcode: verbs.OpSend, Flags: verbs.SendInline,
				SG: []verbs.SGE{{Addr: addrOfBytes(msg), Length: 8}}}}) != nil {
				p.A.CQ.Poll(wc[:])
			}
		}
		want := got + 1
		for got < want {
			_, k, _ := q.PollRound(h, 16, wc[:])
			for _, w := range wc[:k] {
				got++
				p.B.QP.PostRecv([]verbs.RecvWR{{ID: w.ID, SG: []verbs.SGE{rbuf.SGE(64*int(w.ID), 64)}}})
			}
		}
		p.A.CQ.Poll(wc[:])
	}
	benchRounds(b, once)
}
