package soft

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/goportals/goportals/internal/verbs"
	"github.com/goportals/goportals/internal/verbs/verbstest"
)

// the local side trusts the bounds in its shared MR table, which every peer maps
// read-write: a peer that scribbles eLen makes the target write past its region.
func TestRegressionSharedTableTrusted(t *testing.T) {
	p := verbstest.NewPair(t, softEnv)
	big := make([]byte, 8192)
	mr, err := p.B.PD.RegMR(big[:64], rwx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := mr.Dereg(); err != nil {
			t.Errorf("deregister: %v", err)
		}
	}()
	src := p.A.Reg(t, 256, rwx, 9)
	// A (the peer) corrupts B's table entry through its own mapping of B's segment.
	view := p.A.QP.(*qp).peer.view
	off := entryOff(mr.RKey() & mrIdxMask)
	atomic.StoreUint64(view.u64(off+eLen), 1<<20)
	p.A.PostSend(t, verbs.SendWR{ID: 1, Opcode: verbs.OpRDMAWrite, Flags: verbs.SendSignaled,
		SG: []verbs.SGE{src.SGE(0, 256)}, RemoteAddr: mr.Addr() + 64, RKey: mr.RKey()})
	wcs, err := waitN(t, p.A, 1, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if wcs[0].Status == verbs.StatusSuccess && big[64] == src.Mem[0] && big[100] == src.Mem[36] {
		t.Fatalf("B wrote 256 bytes past its 64-byte region")
	}
}
