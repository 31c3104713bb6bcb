package soft

import (
	"testing"
	"time"

	"github.com/goportals/goportals/internal/verbs"
)

// the peer process dies while our queue pair is idle; checkPeers marks it dead
// without failing it; a receive posted afterwards is never flushed (hang).
func TestRegressionRecvAfterPeerDiedIdle(t *testing.T) {
	c, s := startChild(t)
	c.kill()
	if err := c.waitExit(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	q := s.qp.(*qp)
	waitFor(t, "checkPeers noticing the peer died", 10*time.Second, q.peerMarkedDead)
	if st := q.State(); st != verbs.QPReady {
		t.Fatalf("the idle queue pair is %v once its peer is known dead; the scenario wants it still ready", st)
	}
	buf := make([]byte, 64)
	m := regLocal(t, s, buf, rw)
	if err := s.qp.PostRecv([]verbs.RecvWR{{ID: 9, SG: sge(m, 64)}}); err != nil {
		t.Fatal(err)
	}
	wc, err := waitWC(s.cq, 2*time.Second)
	if err != nil {
		t.Fatalf("receive posted after the peer died never completed: %v (state %v)", err, s.qp.State())
	}
	if wc.ID != 9 || wc.Status != verbs.StatusWorkRequestFlushed {
		t.Fatalf("receive completed %+v, want flushed", wc)
	}
}
