package soft

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/goportals/goportals/internal/verbs"
	"golang.org/x/sys/unix"
)

// TestTCPSendMessageWaitsForRoom: small messages that SendMessage writes at
// once (sendNow) into a socket that fills: the frame the socket does not take
// (Linux takes a small write whole or not at all; see
// TestTCPSendMessageCutFrames for frames cut short) waits in the queue for room, later messages are refused
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

// cutSends makes sendNow's writes take only part of each frame, or none of it,
// as cut chooses for the i-th write (its return: how many bytes of the frame
// of m go, m or more for all; 0 is a full socket), until the test ends.
func cutSends(t *testing.T, cut func(i, m int) int) {
	t.Helper()
	i := 0
	testSendCut = func(m int) int {
		k := cut(i, m)
		i++
		return k
	}
	t.Cleanup(func() { testSendCut = nil })
}

// TestTCPSendMessageCutFrames: frames that the socket takes part of (cut in
// the header, or in the payload) or none of go on from where the write
// stopped: the receiver gets every message whole and in order.
func TestTCPSendMessageCutFrames(t *testing.T) {
	const maxLen = 64
	inHeader, inPayload, none := 0, 0, 0
	cutSends(t, func(i, m int) int {
		k := (i * 7) % (m + 1)
		switch {
		case k == 0:
			none++
		case k < frameLen:
			inHeader++
		case k < m:
			inPayload++
		}
		return k
	})
	p := tcpMsgPair(t, maxLen)
	ms := p.A.QP.(verbs.MessageSender)
	mc := p.B.CQ.(verbs.MessageCQ)
	got := 0
	h := func(_ uint64, b []byte) bool {
		checkNumbered(t, b, got)
		got++
		return true
	}
	var wc [8]verbs.WorkCompletion
	buf := make([]byte, maxLen)
	const n = 2000
	deadline := time.Now().Add(20 * time.Second)
	for sent := 0; (sent < n || got < n) && time.Now().Before(deadline); {
		if sent < n {
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
	if got != n {
		t.Fatalf("%d of %d messages arrived", got, n)
	}
	if inHeader == 0 || inPayload == 0 || none == 0 {
		t.Fatalf("cuts: %d in a header, %d in a payload, %d before the frame", inHeader, inPayload, none)
	}
}

// TestTCPSendMessageLastFrameGoesOn: a message whose frame the socket did not
// take is the last one sent: it goes out all the same, with no later message
// to push it.
func TestTCPSendMessageLastFrameGoesOn(t *testing.T) {
	for _, first := range []int{0, 1, frameLen, frameLen + 3} {
		t.Run(fmt.Sprintf("took%d", first), func(t *testing.T) {
			cutSends(t, func(i, m int) int {
				if i == 0 {
					return first
				}
				return m
			})
			p := tcpMsgPair(t, 64)
			ms := p.A.QP.(verbs.MessageSender)
			mc := p.B.CQ.(verbs.MessageCQ)
			msg := make([]byte, 16)
			numbered(msg, 0)
			if err := ms.SendMessage(msg); err != nil {
				t.Fatal(err)
			}
			if n := p.A.QP.(*qp).link.nSendRest.Load(); n != 1 {
				t.Fatalf("%d frames left to the queue, want 1", n)
			}
			got := 0
			h := func(_ uint64, b []byte) bool {
				checkNumbered(t, b, got)
				got++
				return true
			}
			// Only the receiver polls: the sender's link must not wait for
			// another call of its own.
			for deadline := time.Now().Add(10 * time.Second); got == 0 && time.Now().Before(deadline); {
				mc.PollMessages(h, 8)
			}
			if got != 1 {
				t.Fatal("the message did not arrive")
			}
		})
	}
}
