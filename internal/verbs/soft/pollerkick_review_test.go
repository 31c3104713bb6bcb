//go:build linux

package soft

import (
	"context"
	"testing"
	"time"

	"github.com/goportals/goportals/internal/napclock"
	"github.com/goportals/goportals/internal/verbs"
	"github.com/goportals/goportals/internal/verbs/verbstest"
)

// TestReviewBlockedWaitOverTCPIsServed: a caller that blocks in a completion
// queue's Wait over TCP (its spin over, it kicks the helpers and sleeps) is
// served by the TCP poller, which must then watch the socket, not nap on the
// process's nap that the caller's spin kept going (up to NapMax). The SEND it
// waits for is posted while a nap runs, with the link made idle and its next
// look far off so that only the poller reads it (the context goroutine's
// rounds read a hot link themselves, and the test passed with the poller's
// kick rule removed); it must be received before that nap ends, in most of
// the attempts.
func TestReviewBlockedWaitOverTCPIsServed(t *testing.T) {
	t.Setenv(EnvPath, "tcp")
	p := verbstest.NewPair(t, softEnv)
	lb := p.B.QP.(*qp).link
	if lb == nil || !lb.viaPoller {
		t.Skip("the link is not served by the poller")
	}
	bcq := p.B.CQ.(*cq)
	src := p.A.Reg(t, 8, 0, 1)
	dst := p.B.Reg(t, 8, verbs.AccessLocalWrite, 0)
	wdst := p.B.Reg(t, 8, verbs.AccessLocalWrite|verbs.AccessRemoteWrite, 0)
	clock := napclock.Process()
	early, late := 0, 0
	var wc [4]verbs.WorkCompletion
	const attempts = 15 // (a majority of 15: under a loaded host a few attempts come late)
	for attempt := 0; attempt < attempts; attempt++ {
		p.B.PostRecv(t, uint64(attempt), dst.SGE(0, 8))
		growNap() // the application polled for a while
		ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
		done := make(chan error, 1)
		go func() { done <- bcq.Wait(ctx) }()
		// While the caller spins, WRITEs arrive (no completion at B): the
		// poller wakes for them, finds the caller polling and naps.
		for bcq.waiters.Load() == 0 {
			p.A.PostSend(t, verbs.SendWR{ID: 2, Opcode: verbs.OpRDMAWrite, SG: []verbs.SGE{src.SGE(0, 8)},
				RemoteAddr: wdst.Addr(0), RKey: wdst.MR.RKey()})
			time.Sleep(50 * time.Microsecond)
		}
		time.Sleep(300 * time.Microsecond) // the helpers handled the kick
		// Only the poller may read the SEND: the link is idle and its next
		// look far off, which the rounds of the context's goroutine (and
		// their look at the idle links) keep to, and the poller does not.
		lb.quiet.Store(1 << 31)
		lb.nextLook.Store(tcpClock() + int64(time.Hour))
		nap := clock.Nap()
		p.A.PostSend(t, verbs.SendWR{ID: 1, Opcode: verbs.OpSend, SG: []verbs.SGE{src.SGE(0, 8)}})
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		cancel()
		lb.nextLook.Store(0)
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
	t.Logf("early %d late %d", early, late)
	if late >= early {
		t.Fatalf("a caller blocked in Wait over TCP: in %d of %d attempts the SEND it waited for was received only when the process's running nap ended (up to %v; the poller naps in it)", late, attempts, napclock.NapMax)
	}
}
