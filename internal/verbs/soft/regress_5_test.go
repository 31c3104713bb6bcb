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
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range 2 {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = p.A.CQ.Wait(ctx) }()
	}
	time.Sleep(50 * time.Millisecond) // both are past the spin phase
	p.A.PostSend(t, verbs.SendWR{ID: 1, Opcode: verbs.OpRDMAWrite, Flags: verbs.SendSignaled,
		SG: []verbs.SGE{src.SGE(0, 8)}, RemoteAddr: tgt.Addr(0), RKey: tgt.MR.RKey()})
	wg.Wait()
	if errs[0] != nil || errs[1] != nil {
		t.Fatalf("waiters: %v, %v (a completion was ready)", errs[0], errs[1])
	}
}
