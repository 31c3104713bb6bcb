package soft

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/goportals/goportals/internal/verbs"
	"github.com/goportals/goportals/internal/verbs/verbstest"
)

// TestCompletionOrdersPlacement pins down the interleaving behind a race report in
// ReadFenceWrite: the peer consumes a ring WRITE (copies its payload, then moves its
// tail) and the completion is produced by PostSend's own reap, the one after a
// cross-memory READ, not by a progress round. The requester then reads the target.
// The bytes must be there, and under -race the read must not be reported: every
// read of the peer's tail has to carry the happens-before edge of its consume.
func TestCompletionOrdersPlacement(t *testing.T) {
	p := verbstest.NewPair(t, softEnv)
	a := p.A.QP.(*qp)
	actx := p.A.Ctx.(*Context)
	src := p.A.Reg(t, 64, rwx, 1)
	dst := p.B.Reg(t, 64, rwx, 0)
	back := p.A.Reg(t, 64, rwx, 0)

	// No progress round of A's (its goroutine or a poll) may reap the WRITE.
	actx.progMu.Lock()
	locked := true
	defer func() {
		if locked {
			actx.progMu.Unlock()
		}
	}()
	p.A.PostSend(t, verbs.SendWR{ID: 1, Opcode: verbs.OpRDMAWrite, Flags: verbs.SendSignaled,
		SG: []verbs.SGE{src.SGE(0, 64)}, RemoteAddr: dst.Addr(0), RKey: dst.MR.RKey()})
	a.mu.Lock()
	end := a.out.head
	a.mu.Unlock()
	// B's progress goroutine consumes it: wait for the tail, without any Go
	// synchronization with B.
	deadline := time.Now().Add(10 * time.Second)
	for atomic.LoadUint64(a.out.tail) < end {
		if time.Now().After(deadline) {
			t.Fatal("B never consumed the WRITE")
		}
		runtime.Gosched()
	}
	// The READ goes by cross-memory attach inside PostSend, which then reaps.
	p.A.PostSend(t, verbs.SendWR{ID: 2, Opcode: verbs.OpRDMARead,
		SG: []verbs.SGE{back.SGE(0, 64)}, RemoteAddr: dst.Addr(0), RKey: dst.MR.RKey()})
	actx.progMu.Unlock()
	locked = false
	verbstest.Expect(t, p.A.Wait(t, 1)[0], 1, verbs.StatusSuccess, verbs.WCRDMAWrite)
	for i := range dst.Mem {
		if dst.Mem[i] != src.Mem[i] {
			t.Fatalf("byte %d of the completed WRITE is %#x, want %#x", i, dst.Mem[i], src.Mem[i])
		}
	}
}
