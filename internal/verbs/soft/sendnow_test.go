package soft

import (
	"bytes"
	"testing"

	"github.com/goportals/goportals/internal/verbs"
	"github.com/goportals/goportals/internal/verbs/verbstest"
)

// An inline SEND posted behind a SEND still being issued (larger than the ring,
// waiting for the peer's receive) goes out after it: PostSend's fast path never
// overtakes queued work.
func TestInlineSendKeepsOrderBehindQueued(t *testing.T) {
	p := verbstest.NewPair(t, softEnv)
	const big = ringSlots*slotSize + 100<<10 // more than the ring holds
	src := p.A.Reg(t, big+8, rwx, 3)
	dst := p.B.Reg(t, big+8, rwx, 0)
	p.A.PostSend(t, verbs.SendWR{ID: 1, Opcode: verbs.OpSend, Flags: verbs.SendSignaled,
		SG: []verbs.SGE{{Addr: src.Addr(0), Length: big, LKey: src.MR.LKey()}}})
	p.A.PostSend(t, verbs.SendWR{ID: 2, Opcode: verbs.OpSend, Flags: verbs.SendSignaled | verbs.SendInline,
		SG: []verbs.SGE{{Addr: src.Addr(big), Length: 8}}})
	p.B.PostRecv(t, 10, verbs.SGE{Addr: dst.Addr(0), Length: big, LKey: dst.MR.LKey()})
	p.B.PostRecv(t, 11, verbs.SGE{Addr: dst.Addr(big), Length: 8, LKey: dst.MR.LKey()})
	wcs := p.B.Wait(t, 2)
	verbstest.Expect(t, wcs[0], 10, verbs.StatusSuccess, verbs.WCRecv)
	verbstest.Expect(t, wcs[1], 11, verbs.StatusSuccess, verbs.WCRecv)
	if wcs[0].ByteLen != big || wcs[1].ByteLen != 8 {
		t.Fatalf("received %d and %d bytes, want %d and 8", wcs[0].ByteLen, wcs[1].ByteLen, big)
	}
	if !bytes.Equal(dst.Mem, src.Mem) {
		t.Fatal("the data arrived out of place")
	}
	sends := p.A.Wait(t, 2)
	verbstest.Expect(t, sends[0], 1, verbs.StatusSuccess, verbs.WCSend)
	verbstest.Expect(t, sends[1], 2, verbs.StatusSuccess, verbs.WCSend)
}
