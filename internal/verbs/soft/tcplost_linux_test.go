package soft

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/goportals/goportals/internal/verbs"
	"golang.org/x/sys/unix"
)

// TestTCPLostLinkStaysLost: a link whose read met the end of the stream, while
// callers poll (the poller's nap took its socket out of the poller's set), is
// lost once: neither the callers' next rounds nor the poller, when the callers
// stop before the failure is marked, read the dead socket again, and the
// poller does not put it back in its set.
func TestTCPLostLinkStaysLost(t *testing.T) {
	p, la, _ := settledTCPPair(t)
	c := la.q.ctx
	var st unix.Stat_t
	if err := unix.Fstat(la.fd, &st); err != nil {
		t.Fatal(err)
	}
	ino := fmt.Sprintf(" ino:%x ", st.Ino)
	var wc [4]verbs.WorkCompletion
	deadline := time.Now().Add(10 * time.Second)
	for pollerState(c) != "select" || epollFDsHolding(c, ino) != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("callers polling: the poller (state %q) still watches the link's socket", pollerState(c))
		}
		tcpPingPong(t, p, 1) // (a poller waiting in the kernel wakes when something comes)
		for j := 0; j < 1000; j++ {
			p.A.CQ.Poll(wc[:])
		}
	}
	// Hold the failure back (broken, which marks the link failed) and count
	// the times the link is found lost.
	var lost atomic.Int32
	release := make(chan struct{})
	hook := func() {
		lost.Add(1)
		<-release
	}
	testLostHook.Store(&hook)
	t.Cleanup(func() {
		testLostHook.Store(nil)
		close(release)
	})
	// The peer goes: the callers' rounds read the end of the stream.
	if err := p.B.QP.Close(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); lost.Load() == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the end of the stream was not seen")
		}
		p.A.CQ.Poll(wc[:])
	}
	reads := la.nReads.Load()
	for j := 0; j < 1000; j++ {
		p.A.CQ.Poll(wc[:])
	}
	if n := la.nReads.Load() - reads; n != 0 {
		t.Errorf("the callers' rounds read the lost link's socket %d times more", n)
	}
	// The callers stop: the poller's nap ends and it tends its links.
	time.Sleep(100 * time.Millisecond)
	if n := lost.Load(); n != 1 {
		t.Errorf("the link was found lost %d times, want once", n)
	}
	if n := epollFDsHolding(c, ino); n != 0 {
		t.Errorf("the lost link's socket is back in %d epoll sets", n)
	}
}
