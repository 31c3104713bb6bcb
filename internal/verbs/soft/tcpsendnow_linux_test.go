package soft

import (
	"errors"
	"testing"
	"time"

	"github.com/goportals/goportals/internal/verbs"
	"golang.org/x/sys/unix"
)

// TestTCPSendMessageWaitsForRoom: small messages that SendMessage writes at
// once (sendNow) into a socket that fills: the frame the socket takes only part
// of, or none of, waits in the queue for room, later messages are refused
// (ErrNoResources) until it went out, and the receiver gets every message whole
// and in order once it reads again.
func TestTCPSendMessageWaitsForRoom(t *testing.T) {
	const maxLen = 64
	p := tcpMsgPair(t, maxLen)
	ms := p.A.QP.(verbs.MessageSender)
	mc := p.B.CQ.(verbs.MessageCQ)
	al := p.A.QP.(*qp).link
	// A small send buffer: the socket fills after a few frames.
	if err := unix.SetsockoptInt(al.fd, unix.SOL_SOCKET, unix.SO_SNDBUF, 4096); err != nil {
		t.Fatal(err)
	}
	got := 0
	h := func(_ uint64, b []byte) bool {
		checkNumbered(t, b, got)
		got++
		return true
	}
	var wc [8]verbs.WorkCompletion
	buf := make([]byte, maxLen)
	sent, refused := 0, 0
	// The receiver does not read: send until the socket refuses.
	for ; refused == 0 && sent < 1_000_000; sent++ {
		b := buf[:4+(sent*13)%(maxLen-3)]
		numbered(b, sent)
		if err := ms.SendMessage(b); err != nil {
			if !errors.Is(err, verbs.ErrNoResources) {
				t.Fatalf("SendMessage %d: %v", sent, err)
			}
			refused++
			break
		}
	}
	if refused == 0 {
		t.Fatalf("%d messages and the socket never filled", sent)
	}
	if al.nSendRest.Load() == 0 {
		t.Fatalf("the socket filled (%d messages) and no frame was left to the queue", sent)
	}
	// Now the receiver reads; the rest of the messages go out as room comes.
	// (Few: with so small a send buffer, room comes with the receiver's
	// delayed ACKs.)
	const more = 100
	total := sent + more
	deadline := time.Now().Add(20 * time.Second)
	for (sent < total || got < total) && time.Now().Before(deadline) {
		if sent < total {
			b := buf[:4+(sent*13)%(maxLen-3)]
			numbered(b, sent)
			if err := ms.SendMessage(b); err == nil {
				sent++
			} else if !errors.Is(err, verbs.ErrNoResources) {
				t.Fatalf("SendMessage %d: %v", sent, err)
			}
		}
		p.A.CQ.Poll(wc[:])
		mc.PollMessages(h, 64)
	}
	if got != total {
		t.Fatalf("%d of %d messages arrived", got, total)
	}
}
