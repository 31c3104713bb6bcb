package soft

import (
	"runtime"
	"testing"
	"time"

	"github.com/goportals/goportals/internal/verbs"
)

// TestReviewPollerLeavesNetpollerWhenCallersReadFirst the
// commit's TestTCPPollerLeavesGoNetpollerWhileNapping run with one processor
// (the configuration the commit targets) and for 2 s: the duplicate of the
// poller's epoll descriptor should leave Go's network poller while callers
// poll. It stays: a wake made while the poller waits in the kernel leaves a
// stale token in kickCh that ends the next nap at once (see
// TestReviewPollerNapsUnderWriteTraffic).
func TestReviewPollerLeavesNetpollerWhenCallersReadFirst(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	p, l, _ := settledTCPPair(t)
	c, want := pollerInNetpoller(t, l)
	// Callers poll for two seconds, with messages arriving (each read by a
	// caller). The duplicate should be closed (the poller napping) long
	// before that.
	var wc [4]verbs.WorkCompletion
	end := time.Now().Add(2 * time.Second)
	for time.Now().Before(end) {
		tcpPingPong(t, p, 1)
		for j := 0; j < 1000; j++ {
			p.A.CQ.Poll(wc[:])
		}
		if epollFDsHolding(c, want) == 0 {
			return
		}
	}
	t.Fatalf("callers polled for 2s with messages arriving: the poller (state %q, asleep %v) still holds its epoll duplicate in Go's network poller",
		pollerState(c), c.tcp.asleep.Load())
}

// TestReviewPollerNapsUnderWriteTraffic: A WRITEs to B while both sides poll
// (no receive is posted: no caller kicks); B's poller, parked in the network
// poller when the traffic starts, should go to napping (duplicate closed) and
// stay there. It does not: each ACK queued while it waits in the kernel calls
// ackQueued -> wakePoller -> wake, which also leaves a token in kickCh; the
// woken poller finds callers polling, naps, and the stale token ends the nap at
// once (polled reset), so it reopens the duplicate and waits in the kernel
// again, to be woken by the next ACK: about 200 open/close cycles in 2 s with
// GOMAXPROCS=1 and it is never found napping.
func TestReviewPollerNapsUnderWriteTraffic(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1)) // a rank bound to one core
	p, _, l := settledTCPPair(t)
	c, want := pollerInNetpoller(t, l)
	src := p.A.Reg(t, 64, verbs.AccessLocalWrite, 1)
	dst := p.B.Reg(t, 64, verbs.AccessLocalWrite|verbs.AccessRemoteWrite, 0)
	var wc [4]verbs.WorkCompletion
	end := time.Now().Add(2 * time.Second)
	writes := 0
	for time.Now().Before(end) {
		if err := p.A.QP.PostSend([]verbs.SendWR{{ID: 1, Opcode: verbs.OpRDMAWrite, Flags: verbs.SendSignaled,
			SG: []verbs.SGE{src.SGE(0, 8)}, RemoteAddr: dst.Addr(0), RKey: dst.MR.RKey()}}); err != nil {
			t.Fatal(err)
		}
		writes++
		for i := 0; ; i++ {
			p.B.CQ.Poll(wc[:])
			k, err := p.A.CQ.Poll(wc[:])
			if err != nil {
				t.Fatal(err)
			}
			if k > 0 {
				break
			}
			if i&63 == 63 {
				runtime.Gosched()
			}
		}
		if writes%100 == 0 && epollFDsHolding(c, want) == 0 {
			t.Logf("napping after %d writes (state %q)", writes, pollerState(c))
			return
		}
	}
	t.Fatalf("%d WRITEs with both sides polling for 2s: B's poller (state %q, asleep %v) still holds its epoll duplicate in Go's network poller",
		writes, pollerState(c), c.tcp.asleep.Load())
}
