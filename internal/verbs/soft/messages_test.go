package soft

import (
	"context"
	"encoding/binary"
	"errors"
	"testing"
	"time"
	"unsafe"

	"github.com/goportals/goportals/internal/verbs"
	"github.com/goportals/goportals/internal/verbs/verbstest"
)

// msgPair is a connected pair whose B side is in message mode (maxLen bytes,
// tag 7) when maxLen > 0.
func msgPair(t testing.TB, maxLen int) *verbstest.Pair {
	t.Helper()
	p := verbstest.NewPairOpts(t, softEnv, verbstest.PairOptions{NoConnect: true})
	if maxLen > 0 {
		if err := p.B.QP.(verbs.MessageQP).EnableMessages(7, maxLen); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.A.QP.Connect(p.B.QP.Address()); err != nil {
		t.Fatal(err)
	}
	if err := p.B.QP.Connect(p.A.QP.Address()); err != nil {
		t.Fatal(err)
	}
	return p
}

// numbered fills b with message i: its number, then a pattern of it.
func numbered(b []byte, i int) {
	for j := range b {
		b[j] = byte(i*7 + j)
	}
	if len(b) >= 4 {
		binary.LittleEndian.PutUint32(b, uint32(i))
	}
}

// stopIfFailed ends the test if it failed: a message handler, which runs
// under the provider's locks, reports with t.Errorf and stops the poll (a
// t.Fatal there left the locks taken, and the test hung until its timeout),
// and the test ends once the poll has returned.
func stopIfFailed(t testing.TB) {
	t.Helper()
	if t.Failed() {
		t.FailNow()
	}
}

func checkNumbered(t testing.TB, b []byte, i int) {
	t.Helper()
	want := make([]byte, len(b))
	numbered(want, i)
	if string(b) != string(want) {
		// (Errorf, not Fatalf: message handlers call this under the
		// provider's locks, where a Fatal's Goexit left the test hanging
		// until its timeout instead of failing)
		t.Errorf("message %d (%d bytes): got %x, want %x", i, len(b), b, want)
	}
}

// sendMsg sends b as a message, falling back to an inline SEND work request when
// SendMessage cannot send at once, and polls both sides while the ring is full.
func sendMsg(t testing.TB, p *verbstest.Pair, b []byte, poll func()) {
	t.Helper()
	for {
		err := p.A.QP.(verbs.MessageSender).SendMessage(b)
		if err == nil {
			return
		}
		if !errors.Is(err, verbs.ErrNoResources) {
			t.Fatal(err)
		}
		err = p.A.QP.PostSend([]verbs.SendWR{{Opcode: verbs.OpSend, Flags: verbs.SendInline,
			SG: []verbs.SGE{{Addr: addrOfBytes(b), Length: uint32(len(b))}}}})
		if err == nil {
			return
		}
		if !errors.Is(err, verbs.ErrNoResources) {
			t.Fatal(err)
		}
		poll()
	}
}

func addrOfBytes(b []byte) uint64 {
	if len(b) == 0 {
		return 0
	}
	return uint64(uintptr(unsafe.Pointer(&b[0])))
}

// TestMessagesOrderAndWraparound: messages of every size up to the limit arrive
// in order, whole, without a posted receive or a completion, across many turns of
// the ring (so some wrap around its end), whether sent by SendMessage or as work
// requests.
func TestMessagesOrderAndWraparound(t *testing.T) {
	const maxLen = 300
	p := msgPair(t, maxLen)
	mc := p.B.CQ.(verbs.MessageCQ)
	got := 0
	wrapped := 0
	q := p.B.QP.(*qp)
	h := func(tag uint64, b []byte) bool {
		if tag != 7 {
			t.Errorf("tag %d", tag)
			return false
		}
		if checkNumbered(t, b, got); t.Failed() {
			return false
		}
		if len(b) > 0 && !inRing(q, b) {
			wrapped++
		}
		got++
		return true
	}
	var wc [8]verbs.WorkCompletion
	poll := func() {
		if _, err := mc.PollMessages(h, 16); err != nil {
			t.Fatal(err)
		}
		stopIfFailed(t)
		if k, _ := p.B.CQ.Poll(wc[:]); k != 0 {
			t.Fatalf("completions on the receiver: %v", wc[:k])
		}
		p.A.CQ.Poll(wc[:])
	}
	const n = 5000
	buf := make([]byte, maxLen)
	for i := 0; i < n; i++ {
		b := buf[:(i*37)%(maxLen+1)]
		numbered(b, i)
		if i%5 == 0 {
			// a work request: the receiver cannot tell
			for p.A.QP.PostSend([]verbs.SendWR{{Opcode: verbs.OpSend, Flags: verbs.SendInline,
				SG: []verbs.SGE{{Addr: addrOfBytes(b), Length: uint32(len(b))}}}}) != nil {
				poll()
			}
		} else {
			sendMsg(t, p, b, poll)
		}
		if i%3 == 0 {
			poll()
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for got < n && time.Now().Before(deadline) {
		poll()
	}
	if got != n {
		t.Fatalf("%d of %d messages", got, n)
	}
	if wrapped == 0 {
		t.Fatalf("no message wrapped around the ring's end")
	}
}

// inRing reports whether b lies in q's inbound ring (handed out in place).
func inRing(q *qp, b []byte) bool {
	s := q.in.slots
	lo, hi := uintptr(unsafe.Pointer(&s[0])), uintptr(unsafe.Pointer(&s[len(s)-1]))
	a := uintptr(unsafe.Pointer(&b[0]))
	return a >= lo && a <= hi
}

// TestMessagesInPlace: a message that does not wrap is handed out in the ring
// itself, and the bytes are the ring's to reuse once the handler returned: the
// next messages overwrite them.
func TestMessagesInPlace(t *testing.T) {
	p := msgPair(t, 64)
	mc := p.B.CQ.(verbs.MessageCQ)
	q := p.B.QP.(*qp)
	var first []byte
	h := func(_ uint64, b []byte) bool {
		if !inRing(q, b) {
			t.Errorf("message not in place")
			return false
		}
		if first == nil {
			first = b // kept only to show the ring reuses it (never do this)
		}
		return true
	}
	b := make([]byte, 8)
	for i := 0; i < ringSlots+1; i++ {
		numbered(b, i)
		sendMsg(t, p, b, func() { mc.PollMessages(h, 64); stopIfFailed(t) })
		for {
			n, _ := mc.PollMessages(h, 64)
			stopIfFailed(t)
			if n == 1 {
				break
			}
		}
	}
	// One slot per 8-byte message: message ringSlots reused message 0's slot.
	checkNumbered(t, first, ringSlots)
}

// TestMessagesMixedWithWorkRequests: order is kept per queue pair with SENDs too
// long for messages (posted receives), SENDs with immediate and RDMA WRITEs: a
// message is handed out only after what came before it was applied and completed.
func TestMessagesMixedWithWorkRequests(t *testing.T) {
	p := msgPair(t, 32)
	mc := p.B.CQ.(verbs.MessageCQ)
	src := p.A.Reg(t, 4096, rwx, 1)
	dst := p.B.Reg(t, 4096, rwx, 0)
	rbuf := p.B.Reg(t, 4096, rwx, 0)
	for i := 0; i < 8; i++ {
		p.B.PostRecv(t, uint64(100+i), rbuf.SGE(i*256, 256))
	}
	var log []string
	h := func(_ uint64, b []byte) bool {
		// The WRITE before message 2 is visible when it is handed out.
		if b[0] == 2 && dst.Mem[0] != src.Mem[0] {
			t.Errorf("message 2 overtook the WRITE before it")
		}
		log = append(log, "msg"+string('0'+rune(b[0])))
		return true
	}
	msgb := func(i byte) []byte { return []byte{i, 0, 0, 0, 0, 0, 0, 0} }
	sendMsg(t, p, msgb(1), nil)
	p.A.PostSend(t, verbs.SendWR{ID: 1, Opcode: verbs.OpSend, SG: []verbs.SGE{src.SGE(0, 100)}}) // too long: a receive
	p.A.PostSend(t, verbs.SendWR{ID: 2, Opcode: verbs.OpRDMAWrite, SG: []verbs.SGE{src.SGE(0, 64)},
		RemoteAddr: dst.Addr(0), RKey: dst.MR.RKey()})
	// queued behind the WRITE? SendMessage keeps the order or declines
	sendMsg(t, p, msgb(2), nil)
	p.A.PostSend(t, verbs.SendWR{ID: 3, Opcode: verbs.OpSendWithImm, Imm: 9, SG: []verbs.SGE{src.SGE(0, 8)}}) // with immediate: a receive
	sendMsg(t, p, msgb(3), nil)
	var wc [8]verbs.WorkCompletion
	deadline := time.Now().Add(10 * time.Second)
	for len(log) < 5 && time.Now().Before(deadline) {
		// The completion queue first: a completion polled is older than any
		// message handed out after it.
		k, _ := p.B.CQ.Poll(wc[:])
		for _, w := range wc[:k] {
			if w.Status != verbs.StatusSuccess {
				t.Fatalf("completion %+v", w)
			}
			log = append(log, "recv"+string('0'+rune(w.ByteLen%10)))
		}
		mc.PollMessages(h, 1)
		p.A.CQ.Poll(wc[:])
	}
	want := []string{"msg1", "recv0", "msg2", "recv8", "msg3"}
	if len(log) != len(want) {
		t.Fatalf("got %v, want %v", log, want)
	}
	for i := range want {
		if log[i] != want[i] {
			t.Fatalf("got %v, want %v", log, want)
		}
	}
}

// TestMessagesDisabled: without message mode, SendMessage's SENDs take posted
// receives and complete as any SEND; with it, longer SENDs still do.
func TestMessagesDisabled(t *testing.T) {
	for _, maxLen := range []int{0, 16} {
		p := msgPair(t, maxLen)
		rbuf := p.B.Reg(t, 256, rwx, 0)
		p.B.PostRecv(t, 5, rbuf.SGE(0, 256))
		b := make([]byte, 40)
		numbered(b, 3)
		if err := p.A.QP.(verbs.MessageSender).SendMessage(b); err != nil {
			t.Fatal(err)
		}
		wc := p.B.Wait(t, 1)
		if wc[0].ID != 5 || wc[0].Status != verbs.StatusSuccess || wc[0].ByteLen != 40 || wc[0].Opcode != verbs.WCRecv {
			t.Fatalf("maxLen %d: completion %+v", maxLen, wc[0])
		}
		checkNumbered(t, rbuf.Mem[:40], 3)
		if maxLen > 0 {
			n, err := p.B.CQ.(verbs.MessageCQ).PollMessages(func(uint64, []byte) bool { t.Error("a message"); return false }, 8)
			if n != 0 || err != nil {
				t.Fatalf("PollMessages = %d, %v", n, err)
			}
		}
	}
}

// TestEnableMessagesAfterConnect: message mode is chosen before connecting.
func TestEnableMessagesAfterConnect(t *testing.T) {
	p := verbstest.NewPair(t, softEnv)
	if err := p.B.QP.(verbs.MessageQP).EnableMessages(1, 64); !errors.Is(err, verbs.ErrQPState) {
		t.Fatalf("EnableMessages after Connect: %v", err)
	}
}

// TestMessagesWaitWakes: a Wait on the receive queue that went to sleep returns
// when a message arrives (the provider's progress goroutine finds it).
func TestMessagesWaitWakes(t *testing.T) {
	p := msgPair(t, 64)
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		done <- p.B.CQ.Wait(ctx)
	}()
	time.Sleep(50 * time.Millisecond) // past the spin: asleep
	if err := p.A.QP.(verbs.MessageSender).SendMessage([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var got string
	n := 0
	for i := 0; n == 0 && i < 1e6; i++ {
		// 0 while the progress goroutine runs a round: poll again
		n, _ = p.B.CQ.(verbs.MessageCQ).PollMessages(func(_ uint64, b []byte) bool { got = string(b); return true }, 4)
	}
	if n != 1 || got != "hello" {
		t.Fatalf("PollMessages = %d %q", n, got)
	}
}

// TestMessageHandlerPosts: a handler may answer on the queue pair it reads,
// including a long RDMA READ the provider runs synchronously inside it, and a
// Poll inside it drives no progress (so no drain reads the ring under it); it can
// stop the poll after a message.
func TestMessageHandlerPosts(t *testing.T) {
	p := msgPair(t, 64)
	mc := p.B.CQ.(verbs.MessageCQ)
	src := p.A.Reg(t, 1<<20, rwx, 3)
	dst := p.B.Reg(t, 1<<20, rwx, 0)
	handled, reads := 0, 0
	var wc [8]verbs.WorkCompletion
	countReads := func(k int) {
		for _, w := range wc[:k] {
			if w.ID == 77 && w.Status == verbs.StatusSuccess {
				reads++
			}
		}
	}
	h := func(_ uint64, b []byte) bool {
		handled++
		// The READ of the whole region: by cross-memory attach, inside PostSend.
		if err := p.B.QP.PostSend([]verbs.SendWR{{ID: 77, Opcode: verbs.OpRDMARead, Flags: verbs.SendSignaled,
			SG: []verbs.SGE{dst.SGE(0, 1<<20)}, RemoteAddr: src.Addr(0), RKey: src.MR.RKey()}}); err != nil {
			t.Error(err)
			return false
		}
		if err := p.B.QP.(verbs.MessageSender).SendMessage(b); err != nil {
			t.Error(err)
			return false
		}
		k, err := p.B.CQ.Poll(wc[:])
		if err != nil {
			t.Error(err)
			return false
		}
		countReads(k)
		return false
	}
	for i := 0; i < 3; i++ {
		if err := p.A.QP.(verbs.MessageSender).SendMessage([]byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
	}
	n, err := mc.PollMessages(h, 16)
	for i := 0; n == 0 && err == nil && i < 1e6; i++ {
		n, err = mc.PollMessages(h, 16) // 0 while the progress goroutine runs a round
	}
	stopIfFailed(t)
	if n != 1 || err != nil {
		t.Fatalf("PollMessages = %d, %v; want 1 (the handler stops)", n, err)
	}
	if string(dst.Mem) != string(src.Mem) {
		t.Fatalf("READ did not complete inside the handler")
	}
	for handled < 3 {
		mc.PollMessages(h, 16)
	}
	// A's side gets the echoes as receives (it is not in message mode).
	rbuf := p.A.Reg(t, 64, rwx, 0)
	for i := 0; i < 3; i++ {
		p.A.PostRecv(t, uint64(i), rbuf.SGE(i, 1))
	}
	got := p.A.Wait(t, 3)
	for i, w := range got {
		if w.ID != uint64(i) || w.ByteLen != 1 {
			t.Fatalf("echo %d: %+v", i, w)
		}
	}
	if string(rbuf.Mem[:3]) != "\x00\x01\x02" {
		t.Fatalf("echoes %x", rbuf.Mem[:3])
	}
	for reads < 3 {
		k, _ := p.B.CQ.Poll(wc[:])
		countReads(k)
	}
}

// TestMessagesAllocateNothing: sending and handing out a message allocates
// nothing.
func TestMessagesAllocateNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates on its own")
	}
	p := msgPair(t, 64)
	mc := p.B.CQ.(verbs.MessageCQ)
	ms := p.A.QP.(verbs.MessageSender)
	b := make([]byte, 48)
	got := 0
	h := func(uint64, []byte) bool { got++; return true }
	once := func() {
		for ms.SendMessage(b) != nil {
			mc.PollMessages(h, 16)
		}
		for n, _ := mc.PollMessages(h, 16); n == 0; n, _ = mc.PollMessages(h, 16) {
		}
	}
	for i := 0; i < 100; i++ {
		once()
	}
	if n := testing.AllocsPerRun(1000, once); n != 0 {
		t.Fatalf("%v allocations per message", n)
	}
}

// TestMessageHandlerDeregisters: a handler may deregister memory (the engine
// releases pinned regions while it handles a message): Dereg does not wait for
// the progress lock the handler runs under.
func TestMessageHandlerDeregisters(t *testing.T) {
	p := msgPair(t, 64)
	buf := p.B.Reg(t, 4096, rwx, 0)
	done := make(chan int, 1)
	go func() {
		h := func(uint64, []byte) bool {
			if err := buf.MR.Dereg(); err != nil {
				t.Error(err)
			}
			return true
		}
		for {
			if n, _ := p.B.CQ.(verbs.MessageCQ).PollMessages(h, 4); n > 0 {
				done <- n
				return
			}
		}
	}()
	if err := p.A.QP.(verbs.MessageSender).SendMessage([]byte{1}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("a handler's Dereg deadlocked")
	}
}

// BenchmarkMessagePathSerial8B is BenchmarkSendPathSerial8B in message mode: an
// 8-byte SendMessage, then PollMessages on the other context, on one goroutine.
func BenchmarkMessagePathSerial8B(b *testing.B) {
	p := msgPair(b, 64)
	mc := p.B.CQ.(verbs.MessageCQ)
	ms := p.A.QP.(verbs.MessageSender)
	msg := make([]byte, 8)
	got := 0
	h := func(_ uint64, m []byte) bool { got += len(m); return true }
	once := func() {
		for ms.SendMessage(msg) != nil {
			mc.PollMessages(h, 16)
		}
		for n, _ := mc.PollMessages(h, 16); n == 0; n, _ = mc.PollMessages(h, 16) {
		}
	}
	benchRounds(b, once)
}

// TestMessagesBeforePeerClose: messages the peer sent before it closed its queue
// pair are handed out before the queue pair fails (as drain applies SENDs before
// it fails on a closed peer): the last answers of a peer that finishes are not
// lost.
func TestMessagesBeforePeerClose(t *testing.T) {
	p := msgPair(t, 64)
	rbuf := p.B.Reg(t, 64, rwx, 0)
	p.B.PostRecv(t, 9, rbuf.SGE(0, 64)) // outstanding work: the close fails the queue pair
	for i := 0; i < 3; i++ {
		if err := p.A.QP.(verbs.MessageSender).SendMessage([]byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.A.QP.Close(); err != nil {
		t.Fatal(err)
	}
	var wc [4]verbs.WorkCompletion
	got := 0
	flushed := false
	h := func(_ uint64, b []byte) bool {
		if flushed || len(b) != 1 || int(b[0]) != got {
			t.Errorf("message %x after %d messages (flushed %v)", b, got, flushed)
			return false
		}
		got++
		return true
	}
	deadline := time.Now().Add(10 * time.Second)
	for !flushed && time.Now().Before(deadline) {
		k, _ := p.B.CQ.Poll(wc[:]) // the completion queue first: a failure here would lose them
		for _, w := range wc[:k] {
			if w.ID == 9 && w.Status != verbs.StatusSuccess {
				flushed = true
			}
		}
		p.B.CQ.(verbs.MessageCQ).PollMessages(h, 1)
		stopIfFailed(t)
	}
	if got != 3 || !flushed {
		t.Fatalf("%d messages, receive flushed %v", got, flushed)
	}
}

// benchRounds runs once 1000 times to warm up, then b.N times timed, counting
// allocations.
func benchRounds(b *testing.B, once func()) {
	for i := 0; i < 1000; i++ {
		once()
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		once()
	}
}
