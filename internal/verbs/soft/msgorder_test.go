package soft

import (
	"errors"
	"testing"
	"time"

	"github.com/goportals/goportals/internal/verbs"
)

// TestSendMessageBehindWaitingWrite: a cross-memory RDMA WRITE that waits for
// the peer to apply an earlier ring WRITE is not issued yet, so SendMessage
// refuses (it would overtake it); the message posted as a work request instead
// reaches the peer after the WRITE's data (a pushed long put's FIN behind its
// data).
func TestSendMessageBehindWaitingWrite(t *testing.T) {
	p := msgPair(t, 64)
	const big = 64 << 10
	src := p.A.Reg(t, big, rwx, 3)
	dst := p.B.Reg(t, big+64, rwx, 0)
	bctx := p.B.Ctx.(*Context)
	bctx.progMu.Lock() // B applies nothing for now
	locked := true
	defer func() {
		if locked {
			bctx.progMu.Unlock()
		}
	}()
	small := verbs.SendWR{Opcode: verbs.OpRDMAWrite, SG: []verbs.SGE{src.SGE(0, 64)}, RemoteAddr: dst.Addr(big), RKey: dst.MR.RKey()}
	large := verbs.SendWR{Opcode: verbs.OpRDMAWrite, SG: []verbs.SGE{src.SGE(0, big)}, RemoteAddr: dst.Addr(0), RKey: dst.MR.RKey()}
	if err := p.A.QP.PostSend([]verbs.SendWR{small, large}); err != nil {
		t.Fatal(err)
	}
	if dst.Mem[0] != 0 {
		t.Fatalf("the large WRITE ran before the peer applied the small one")
	}
	fin := []byte("fin")
	err := p.A.QP.(verbs.MessageSender).SendMessage(fin)
	if !errors.Is(err, verbs.ErrNoResources) {
		t.Fatalf("SendMessage with a WRITE waiting: %v, want ErrNoResources", err)
	}
	if err := p.A.QP.PostSend([]verbs.SendWR{{Opcode: verbs.OpSend, Flags: verbs.SendInline,
		SG: []verbs.SGE{{Addr: addrOfBytes(fin), Length: uint32(len(fin))}}}}); err != nil {
		t.Fatal(err)
	}
	bctx.progMu.Unlock()
	locked = false
	got := false
	h := func(_ uint64, b []byte) bool {
		if string(b) != "fin" {
			t.Errorf("message %q", b)
			return false
		}
		if string(dst.Mem[:big]) != string(src.Mem) {
			t.Errorf("the message came before the WRITE's data")
			return false
		}
		got = true
		return true
	}
	var wc [4]verbs.WorkCompletion
	deadline := time.Now().Add(10 * time.Second)
	for !got && time.Now().Before(deadline) {
		p.A.CQ.Poll(wc[:])
		p.B.CQ.Poll(wc[:])
		p.B.CQ.(verbs.MessageCQ).PollMessages(h, 4)
		stopIfFailed(t)
	}
	if !got {
		t.Fatal("no message")
	}
}
