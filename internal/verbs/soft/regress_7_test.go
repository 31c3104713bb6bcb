package soft

import (
	"testing"
	"time"

	"github.com/goportals/goportals/internal/verbs"
	"github.com/goportals/goportals/internal/verbs/verbstest"
)

// one PostSend of [small WRITE with a bad rkey, 1 MiB WRITE]: the CMA write waits
// for the ring to drain, the peer NAKs the first and closes, issue() fails the second
// with RetryExceeded before reap sees the NAK: the first completes "flushed".
func TestRegressionNakLostSinglePost(t *testing.T) {
	p := verbstest.NewPair(t, softEnv)
	src := p.A.Reg(t, 1<<20, rwx, 1)
	tgt := p.B.Reg(t, 1<<20, rwx, 0)
	p.A.PostSend(t,
		verbs.SendWR{ID: 1, Opcode: verbs.OpRDMAWrite, Flags: verbs.SendSignaled,
			SG: []verbs.SGE{src.SGE(0, 8)}, RemoteAddr: tgt.Addr(0), RKey: tgt.MR.RKey() ^ 0x5a5a000},
		verbs.SendWR{ID: 2, Opcode: verbs.OpRDMAWrite, Flags: verbs.SendSignaled,
			SG: []verbs.SGE{src.SGE(0, 1<<20)}, RemoteAddr: tgt.Addr(0), RKey: tgt.MR.RKey()})
	wcs, err := waitN(t, p.A, 2, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if wcs[0].Status != verbs.StatusRemoteAccessError {
		t.Fatalf("completions %v / %v, want the first to be %v", wcs[0].Status, wcs[1].Status, verbs.StatusRemoteAccessError)
	}
}
