package soft

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/goportals/goportals/internal/napclock"
	"github.com/goportals/goportals/internal/verbs"
	"github.com/goportals/goportals/internal/verbs/verbstest"
)

// growNap naps on the process clock back to back until a nap of NapMax runs,
// as the helpers do while an application keeps polling, and returns that nap.
func growNap() <-chan struct{} {
	clock := napclock.Process()
	var ch <-chan struct{}
	for i := 0; i < 5; i++ { // NapMin doubled four times is NapMax
		ch = clock.Nap()
		if i < 4 {
			<-ch
		}
	}
	return ch
}

// TestReviewKickEndsTheContextNap: a caller about to block in a completion
// queue's Wait kicks the context's progress goroutine, which then serves what
// arrives (the caller sleeps on the queue). The goroutine must not go back into
// the process's nap that was running when it was kicked (up to NapMax) because
// the caller polled during it.
func TestReviewKickEndsTheContextNap(t *testing.T) {
	p := verbstest.NewPair(t, softEnv)
	b := p.B.Ctx.(*Context)
	bcq := p.B.CQ.(*cq)
	src := p.A.Reg(t, 8, 0, 1)
	dst := p.B.Reg(t, 8, verbs.AccessLocalWrite, 0)
	early, late := 0, 0
	var wc [4]verbs.WorkCompletion
	for attempt := 0; attempt < 5; attempt++ {
		p.B.PostRecv(t, uint64(attempt), dst.SGE(0, 8))
		nap := growNap()
		// The application polls: the goroutine, woken, naps on the running nap.
		b.markPolled()
		w := b.view.sleepWord()
		if atomic.CompareAndSwapUint32(w, 1, 0) {
			futexWake(w)
		}
		time.Sleep(300 * time.Microsecond)
		// It polls during the nap, then blocks (cq.Wait's kick).
		b.markPolled()
		b.kick()
		time.Sleep(300 * time.Microsecond)
		p.A.PostSend(t, verbs.SendWR{ID: 1, Opcode: verbs.OpSend, SG: []verbs.SGE{src.SGE(0, 8)}})
		for !bcq.hasCompletion() {
			time.Sleep(20 * time.Microsecond)
		}
		select {
		case <-nap:
			late++
		default:
			early++
		}
		if n := bcq.pop(wc[:]); n != 1 {
			t.Fatalf("%d completions, want the receive's", n)
		}
		<-nap
		time.Sleep(2 * time.Millisecond)
	}
	if early == 0 {
		t.Fatalf("kicked by a caller about to block, the context's goroutine went back into the process's running nap (up to %v): in %d attempts of 5 a SEND after the kick was received only once that nap ended", napclock.NapMax, late)
	}
}
