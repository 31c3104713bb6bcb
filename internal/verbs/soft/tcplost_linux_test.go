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
// stop before the failure is marked, read the dead socket again, and neither
// the poller's set nor the look set watches it.
func TestTCPLostLinkStaysLost(t *testing.T) {
	// The case needs the poller's set to have left the socket when the end
	// is read; a nap that ends meanwhile puts it back (and the poller may read
	// the end itself): then try again with a new pair.
	for try := 0; try < 20; try++ {
		if lostLinkCase(t) {
			return
		}
	}
	t.Fatal("20 tries, and the end of the stream never came while the poller's set had left the socket")
}

// lostLinkCase runs the case once; false: the premise did not hold.
func lostLinkCase(t *testing.T) bool {
	p, la, lb := settledTCPPair(t)
	c := la.q.ctx
	var st unix.Stat_t
	if err := unix.Fstat(la.fd, &st); err != nil {
		t.Fatal(err)
	}
	ino := fmt.Sprintf(" ino:%x ", st.Ino)
	awaitPollerNapping(t, p, c, ino, false)
	var wc [4]verbs.WorkCompletion
	// Idle by now (polls that found nothing): its socket is in the look set.
	for deadline := time.Now().Add(10 * time.Second); !la.armed.Load(); {
		if time.Now().After(deadline) {
			t.Fatal("the quiet link never joined the look set")
		}
		p.A.CQ.Poll(wc[:])
	}
	// Hold the failure back (broken, which marks the link failed) and count
	// the times la is found lost; note whether the poller's set held its
	// socket then (epIn: frozen once the link ended).
	var lost atomic.Int32
	var watched atomic.Bool
	release := make(chan struct{})
	hook := func(l *tcpLink) {
		if l == la {
			if lost.Add(1) == 1 {
				l.rxMu.Lock()
				watched.Store(l.epIn != 0)
				l.rxMu.Unlock()
			}
		}
		<-release
	}
	testLostHook.Store(&hook)
	defer func() {
		testLostHook.Store(nil)
		close(release)
	}()
	// The peer's end goes, between two polls: the callers' rounds read the
	// end of the stream.
	p.A.CQ.Poll(wc[:])
	if err := unix.Shutdown(lb.fd, unix.SHUT_RDWR); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); lost.Load() == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the end of the stream was not seen")
		}
		p.A.CQ.Poll(wc[:])
	}
	if watched.Load() {
		return false
	}
	reads, looks := la.nReads.Load(), la.nLooks.Load()
	for j := 0; j < 1000; j++ {
		p.A.CQ.Poll(wc[:])
	}
	if n := la.nReads.Load() - reads; n != 0 {
		t.Errorf("the callers' rounds read the lost link's socket %d times more", n)
	}
	if n := la.nLooks.Load() - looks; n != 0 {
		t.Errorf("the callers' rounds looked at the lost link's socket %d times more", n)
	}
	if la.armed.Load() {
		t.Error("the lost link's socket is in the look set")
	}
	// The callers stop: the poller's nap ends (or a wake ends it) and it
	// tends its links.
	c.wakePoller()
	time.Sleep(100 * time.Millisecond)
	if n := lost.Load(); n != 1 {
		t.Errorf("the link was found lost %d times, want once", n)
	}
	if n := epollFDsHolding(c, ino); n != 0 {
		t.Errorf("the lost link's socket is back in %d epoll sets", n)
	}
	return true
}
