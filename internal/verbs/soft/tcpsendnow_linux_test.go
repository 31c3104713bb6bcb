package soft

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/goportals/goportals/internal/verbs"
	"github.com/goportals/goportals/internal/verbs/verbstest"
	"golang.org/x/sys/unix"
)

// msgStream sends numbered messages of 16 to 64 bytes over a TCP message pair
// and checks that the receiver gets them whole and in order.
type msgStream struct {
	t         *testing.T
	p         *verbstest.Pair
	ms        verbs.MessageSender
	mc        verbs.MessageCQ
	buf       []byte
	sent, got int
}

func newMsgStream(t *testing.T) *msgStream {
	p := tcpMsgPair(t, 64)
	return &msgStream{t: t, p: p, ms: p.A.QP.(verbs.MessageSender), mc: p.B.CQ.(verbs.MessageCQ), buf: make([]byte, 64)}
}

// send sends the next message; false: refused (ErrNoResources).
func (s *msgStream) send() bool {
	b := s.buf[:16+(s.sent*13)%49]
	numbered(b, s.sent)
	if err := s.ms.SendMessage(b); err != nil {
		if !errors.Is(err, verbs.ErrNoResources) {
			s.t.Fatalf("SendMessage %d: %v", s.sent, err)
		}
		return false
	}
	s.sent++
	return true
}

// run sends until total went out, polling both sides, and fails the test
// unless the receiver got all of them, whole and in order, within 20 s.
func (s *msgStream) run(total int) {
	s.t.Helper()
	var wc [8]verbs.WorkCompletion
	var bad error
	h := func(_ uint64, b []byte) bool {
		if bad = numberedDiffers(b, s.got); bad != nil {
			return false // (the test fails after the poll, not under its locks)
		}
		s.got++
		return true
	}
	for deadline := time.Now().Add(20 * time.Second); (s.sent < total || s.got < total) && time.Now().Before(deadline); {
		if s.sent < total {
			s.send()
		}
		s.p.A.CQ.Poll(wc[:])
		s.mc.PollMessages(h, 64)
		if bad != nil {
			s.t.Fatal(bad)
		}
	}
	if s.got != total {
		s.t.Fatalf("%d of %d messages arrived", s.got, total)
	}
}

// numberedDiffers reports how b differs from message i (nil: it does not).
func numberedDiffers(b []byte, i int) error {
	want := make([]byte, len(b))
	numbered(want, i)
	if string(b) != string(want) {
		return fmt.Errorf("message %d (%d bytes): got %x, want %x", i, len(b), b, want)
	}
	return nil
}

// TestTCPSendMessageWaitsForRoom: small messages that SendMessage writes at
// once (sendNow) into a socket that fills: the frame the socket does not take
// (Linux takes a small write whole or not at all; see
// TestTCPSendMessageCutFrames for frames cut short) waits in the queue for
// room, later messages are refused (ErrNoResources) until it went out, and the
// receiver gets every message whole and in order once it reads again.
func TestTCPSendMessageWaitsForRoom(t *testing.T) {
	s := newMsgStream(t)
	al := s.p.A.QP.(*qp).link
	// A small send buffer: the socket fills after a few frames.
	if err := unix.SetsockoptInt(al.fd, unix.SOL_SOCKET, unix.SO_SNDBUF, 4096); err != nil {
		t.Fatal(err)
	}
	// The receiver does not read: send until the socket refuses.
	for s.send() {
		if s.sent == 1_000_000 {
			t.Fatalf("%d messages and the socket never filled", s.sent)
		}
	}
	if al.nSendRest.Load() == 0 {
		t.Fatalf("the socket filled (%d messages) and no frame was left to the queue", s.sent)
	}
	// Now the receiver reads; the rest of the messages go out as room comes.
	// (Few: with so small a send buffer, room comes with the receiver's
	// delayed ACKs.)
	s.run(s.sent + 100)
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
	newMsgStream(t).run(2000)
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
			s := newMsgStream(t)
			if !s.send() {
				t.Fatal("SendMessage refused the first message")
			}
			if n := s.p.A.QP.(*qp).link.nSendRest.Load(); n != 1 {
				t.Fatalf("%d frames left to the queue, want 1", n)
			}
			got := 0
			var bad error
			h := func(_ uint64, b []byte) bool {
				if bad = numberedDiffers(b, got); bad == nil {
					got++
				}
				return false
			}
			// Only the receiver polls: the sender's link must not wait for
			// another call of its own.
			for deadline := time.Now().Add(10 * time.Second); got == 0 && bad == nil && time.Now().Before(deadline); {
				s.mc.PollMessages(h, 8)
			}
			if bad != nil {
				t.Fatal(bad)
			}
			if got != 1 {
				t.Fatal("the message did not arrive")
			}
		})
	}
}
