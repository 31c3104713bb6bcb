package soft

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/goportals/goportals/internal/verbs"
	"github.com/goportals/goportals/internal/verbs/verbstest"
)

// two goroutines Wait on one CQ; one completion arrives; only one Wait returns, the
// other blocks although a completion is ready to poll.
func TestRegressionTwoWaiters(t *testing.T) {
	p := verbstest.NewPair(t, softEnv)
	src := p.A.Reg(t, 64, rwx, 1)
	tgt := p.B.Reg(t, 64, rwx, 0)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range 2 {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = p.A.CQ.Wait(ctx) }()
	}
	defer wg.Wait()
	cq := p.A.CQ.(*cq)
	waitFor(t, "both waiters past the spin phase", 20*time.Second, func() bool { return cq.sleepers() == 2 })
	p.A.PostSend(t, verbs.SendWR{ID: 1, Opcode: verbs.OpRDMAWrite, Flags: verbs.SendSignaled,
		SG: []verbs.SGE{src.SGE(0, 8)}, RemoteAddr: tgt.Addr(0), RKey: tgt.MR.RKey()})
	returned := make(chan struct{})
	go func() { wg.Wait(); close(returned) }()
	select {
	case <-returned:
	case <-time.After(10 * time.Second):
		cancel()
		<-returned
		t.Fatalf("a completion is ready, yet %d of the 2 waiters still block after 10 s", cq.sleepers())
	}
	if errs[0] != nil || errs[1] != nil {
		t.Fatalf("waiters: %v, %v (a completion was ready)", errs[0], errs[1])
	}
	wcs, err := waitN(t, p.A, 1, 10*time.Second)
	if err != nil || wcs[0].ID != 1 || wcs[0].Status != verbs.StatusSuccess {
		t.Fatalf("the completion that woke the waiters: %+v, %v", wcs, err)
	}
}
