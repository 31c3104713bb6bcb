package soft

import (
	"errors"
	"testing"

	"github.com/goportals/goportals/internal/verbs"
	"github.com/goportals/goportals/internal/verbs/verbstest"
)

// BenchmarkSendPathSerial8B is the CPU cost of one 8-byte inline SEND, from
// PostSend to the receive completion polled on the other context, on one
// goroutine: the provider's share of an engine message, whatever the host's load
// (nic's BenchmarkPutPathSerial8B is the same path with the engine around it).
func BenchmarkSendPathSerial8B(b *testing.B) {
	p := verbstest.NewPair(b, softEnv)
	src := p.A.Reg(b, 64, rwx, 1)
	dst := p.B.Reg(b, 64, rwx, 0)
	recv := []verbs.RecvWR{{SG: []verbs.SGE{{Addr: dst.Addr(0), Length: 64, LKey: dst.MR.LKey()}}}}
	send := []verbs.SendWR{{Opcode: verbs.OpSend, Flags: verbs.SendInline,
		SG: []verbs.SGE{{Addr: src.Addr(0), Length: 8}}}}
	for i := 0; i < 64; i++ {
		if err := p.B.QP.PostRecv(recv); err != nil {
			b.Fatal(err)
		}
	}
	var wc [16]verbs.WorkCompletion
	k := 0
	once := func() {
		// Every 32nd SEND is signaled, as the engine's are, so the sender reaps its
		// unsignaled ones.
		send[0].Flags = verbs.SendInline
		if k++; k%32 == 0 {
			send[0].Flags |= verbs.SendSignaled
		}
		for {
			err := p.A.QP.PostSend(send)
			if err == nil {
				break
			}
			if !errors.Is(err, verbs.ErrNoResources) {
				b.Fatal(err)
			}
			p.A.CQ.Poll(wc[:]) // the send queue is full: reap, as the engine's senders do
		}
		for {
			n, err := p.B.CQ.Poll(wc[:])
			if err != nil {
				b.Fatal(err)
			}
			if n > 0 {
				if wc[0].Status != verbs.StatusSuccess || wc[0].ByteLen != 8 {
					b.Fatalf("completion %+v", wc[0])
				}
				break
			}
		}
		if err := p.B.QP.PostRecv(recv); err != nil {
			b.Fatal(err)
		}
		p.A.CQ.Poll(wc[:]) // the sender's side of the round (its signaled sends: none)
	}
	benchRounds(b, once)
}
