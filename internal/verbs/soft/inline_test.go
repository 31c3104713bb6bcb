package soft

import (
	"bytes"
	"testing"
	"time"

	"github.com/goportals/goportals/internal/verbs"
	"github.com/goportals/goportals/internal/verbs/verbstest"
)

// TestInlinePrefixSplits sends every length around the header-slot prefix, gathered
// from three pieces and scattered into three, and checks every byte.
func TestInlinePrefixSplits(t *testing.T) {
	p := verbstest.NewPair(t, softEnv)
	src := p.A.Reg(t, 512, rw, 7)
	dst := p.B.Reg(t, 512, rw, 0)
	for n := 0; n <= 140; n++ {
		a, b := n/3, n/3+n/5
		clear(dst.Mem)
		p.B.PostRecv(t, uint64(n), dst.SGE(0, 5), dst.SGE(100, 37), dst.SGE(200, 300))
		p.A.PostSend(t, verbs.SendWR{ID: uint64(n), Opcode: verbs.OpSendWithImm, Flags: verbs.SendSignaled, Imm: uint32(n),
			SG: []verbs.SGE{src.SGE(0, a), src.SGE(a, b-a), src.SGE(b, n-b)}})
		wcs, err := waitN(t, p.B, 1, 10*time.Second)
		if err != nil || wcs[0].Status != verbs.StatusSuccess || int(wcs[0].ByteLen) != n || wcs[0].Imm != uint32(n) {
			t.Fatalf("n=%d: %+v %v", n, wcs, err)
		}
		if _, err := waitN(t, p.A, 1, 10*time.Second); err != nil {
			t.Fatal(err)
		}
		got := append(append(append([]byte(nil), dst.Mem[0:5]...), dst.Mem[100:137]...), dst.Mem[200:500]...)
		if !bytes.Equal(got[:n], src.Mem[:n]) {
			t.Fatalf("n=%d: received bytes differ", n)
		}
	}
}
