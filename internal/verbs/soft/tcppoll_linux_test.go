package soft

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/goportals/goportals/internal/verbs"
	"github.com/goportals/goportals/internal/verbs/verbstest"
	"golang.org/x/sys/unix"
)

// tcpPingPong runs rounds of a SEND ping-pong over p (joined over TCP), whose sides wait
// by calling Poll in a loop, as the engine's waits do: A sends 8 bytes, B
// answers with 8 bytes once A's arrived. It returns the two queue pairs' links.
func tcpPingPong(t testing.TB, p *verbstest.Pair, rounds int) (*tcpLink, *tcpLink) {
	t.Helper()
	la, lb := p.A.QP.(*qp).link, p.B.QP.(*qp).link
	if la == nil || lb == nil {
		t.Fatalf("the pair is not joined over TCP (paths %q and %q)", p.A.QP.(*qp).Path(), p.B.QP.(*qp).Path())
	}
	ba := p.A.Reg(t, 64, verbs.AccessLocalWrite, 1)
	bb := p.B.Reg(t, 64, verbs.AccessLocalWrite, 2)
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	// spin polls s's queue until want completions of the kinds asked arrived.
	spin := func(s *verbstest.Side, recvs, sends int) error {
		var wc [8]verbs.WorkCompletion
		for i := 0; recvs > 0 || sends > 0; i++ {
			k, err := s.CQ.Poll(wc[:])
			if err != nil {
				return err
			}
			for _, w := range wc[:k] {
				if w.Status != verbs.StatusSuccess {
					t.Errorf("completion %+v", w)
				}
				if w.Opcode == verbs.WCRecv {
					recvs--
				} else {
					sends--
				}
			}
			if i&63 == 63 {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				runtime.Gosched()
			}
		}
		return nil
	}
	p.A.PostRecv(t, 1, ba.SGE(32, 8))
	p.B.PostRecv(t, 1, bb.SGE(32, 8))
	done := make(chan error, 1)
	go func() {
		for i := 0; i < rounds; i++ {
			if err := spin(p.B, 1, 0); err != nil {
				done <- err
				return
			}
			if err := p.B.QP.PostRecv([]verbs.RecvWR{{ID: 1, SG: []verbs.SGE{bb.SGE(32, 8)}}}); err != nil {
				done <- err
				return
			}
			if err := p.B.QP.PostSend([]verbs.SendWR{{ID: 2, Opcode: verbs.OpSend, Flags: verbs.SendSignaled, SG: []verbs.SGE{bb.SGE(0, 8)}}}); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	for i := 0; i < rounds; i++ {
		p.A.PostSend(t, verbs.SendWR{ID: 2, Opcode: verbs.OpSend, Flags: verbs.SendSignaled, SG: []verbs.SGE{ba.SGE(0, 8)}})
		if err := spin(p.A, 1, 1); err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
		p.A.PostRecv(t, 1, ba.SGE(32, 8))
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	return la, lb
}

// TestTCPOnePollerPerContext: the links of a context are waited for by one
// goroutine, the context's poller (which waits in the kernel for all of them),
// not by a goroutine per link.
func TestTCPOnePollerPerContext(t *testing.T) {
	t.Setenv(EnvPath, "tcp")
	p := verbstest.NewPair(t, softEnv)
	for i := 0; i < 3; i++ {
		joinQPs(t, p.A, p.B)
	}
	// A message each way on the first pair: both contexts' links run.
	tcpPingPong(t, p, 1)
	// The whole dump (a truncated one would miss goroutines), and each context's
	// own poller: goroutines of earlier tests (-count) may still be ending.
	buf := make([]byte, 1<<20)
	for n := runtime.Stack(buf, true); n == len(buf); n = runtime.Stack(buf, true) {
		buf = make([]byte, 2*len(buf))
	}
	stacks := string(buf)
	watchers := strings.Count(stacks, "soft.(*tcpLink).watch(")
	var pollers []*tcpPoller
	for _, c := range []*Context{p.A.QP.(*qp).ctx, p.B.QP.(*qp).ctx} {
		pollers = append(pollers, currentPoller(c))
	}
	if watchers != 0 || pollers[0] == nil || pollers[1] == nil || pollers[0] == pollers[1] {
		t.Fatalf("8 links in 2 contexts: %d watcher goroutines, pollers %p and %p, want none and one poller per context",
			watchers, pollers[0], pollers[1])
	}
}

// TestTCPAnswersRideTheNextWrite: the ACK of a SEND waits for the next frame
// the link sends, so in a ping-pong each message goes out with the answer to
// the previous one in a single write.
func TestTCPAnswersRideTheNextWrite(t *testing.T) {
	setForTest(t, &tcpAnswerDelay, time.Minute) // every answer waits for a request to ride with
	const rounds = 300
	t.Setenv(EnvPath, "tcp")
	la, lb := tcpPingPong(t, verbstest.NewPair(t, softEnv), rounds)
	writes := la.nWrites.Load() + lb.nWrites.Load()
	t.Logf("%d messages: %d writes", 2*rounds, writes)
	if writes > 2*rounds+2 {
		t.Fatalf("%d writes for %d messages: answers travel alone", writes, 2*rounds)
	}
}

// TestTCPPollPacesEmptyReads: a caller spinning on Poll over an idle link does
// not read the empty socket at every round: while the link is hot (it received
// less than tcpHotLooks rounds ago) every round reads it, and after that a
// read that found nothing leaves the socket alone for tcpPollGap.
func TestTCPPollPacesEmptyReads(t *testing.T) {
	setForTest(t, &tcpPollGap, time.Hour) // the first empty read past the hot ones is the last
	setHotLooks(t, 8)
	t.Setenv(EnvPath, "tcp")
	p := verbstest.NewPair(t, softEnv)
	l := p.A.QP.(*qp).link
	if l == nil {
		t.Fatal("the pair is not joined over TCP")
	}
	if n := emptyReads(t, p.A, l, 1000); n > uint64(tcpHotLooks)+2 {
		t.Fatalf("1000 polls of an idle link: %d empty reads, want at most %d", n, tcpHotLooks+2)
	}
}

// BenchmarkTCPSendPingPong8B measures a round trip of 8-byte SENDs between two
// contexts of this process joined over TCP, each side spinning on Poll.
func BenchmarkTCPSendPingPong8B(b *testing.B) {
	b.Setenv(EnvPath, "tcp")
	p := verbstest.NewPair(b, softEnv)
	tcpPingPong(b, p, 100) // warm up
	b.ReportAllocs()
	b.ResetTimer()
	la, lb := tcpPingPong(b, p, b.N)
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(float64(la.nReads.Load()+lb.nReads.Load())/n, "reads/op")
	b.ReportMetric(float64(la.nWrites.Load()+lb.nWrites.Load())/n, "writes/op")
}

// TestTCPSendAllocs: an inline SEND over a TCP link, from the post to its
// completion (the peer's receive and its ACK included), allocates nothing once
// the link's free lists are filled.
func TestTCPSendAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	t.Setenv(EnvPath, "tcp")
	p := verbstest.NewPair(t, softEnv)
	ba := p.A.Reg(t, 64, verbs.AccessLocalWrite, 1)
	bb := p.B.Reg(t, 64*256, verbs.AccessLocalWrite, 2)
	recvs := make([]verbs.RecvWR, 256)
	for i := range recvs {
		recvs[i] = verbs.RecvWR{ID: uint64(i), SG: []verbs.SGE{bb.SGE(64*i, 64)}}
	}
	if err := p.B.QP.PostRecv(recvs); err != nil {
		t.Fatal(err)
	}
	wrs := []verbs.SendWR{{ID: 7, Opcode: verbs.OpSend, Flags: verbs.SendSignaled | verbs.SendInline,
		SG: []verbs.SGE{ba.SGE(0, 8)}}}
	var wc [4]verbs.WorkCompletion
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	send := func() {
		if err := p.A.QP.PostSend(wrs); err != nil {
			t.Fatal(err)
		}
		for {
			k, err := p.A.CQ.Poll(wc[:])
			if err != nil {
				t.Fatal(err)
			}
			if k > 0 {
				if wc[0].Status != verbs.StatusSuccess {
					t.Fatalf("completion %+v", wc[0])
				}
				return
			}
			if ctx.Err() != nil {
				t.Fatal(ctx.Err())
			}
			runtime.Gosched()
		}
	}
	for i := 0; i < 20; i++ {
		send()
	}
	if n := testing.AllocsPerRun(100, send); n > 0 {
		t.Fatalf("%.2f allocations per SEND", n)
	}
}

// TestTCPSocketOutOfGoNetpoller: a link served by the poller is in one epoll
// set, the poller's, not also in the Go runtime's network poller (whose idle
// thread the kernel would wake at every segment, for nobody).
func TestTCPSocketOutOfGoNetpoller(t *testing.T) {
	t.Setenv(EnvPath, "tcp")
	p := verbstest.NewPair(t, softEnv)
	tcpPingPong(t, p, 1)
	l := p.A.QP.(*qp).link
	var st unix.Stat_t
	if err := unix.Fstat(l.fd, &st); err != nil {
		t.Fatal(err)
	}
	// Each epoll descriptor's fdinfo lists its targets, with their inodes.
	want := fmt.Sprintf(" ino:%x ", st.Ino)
	if _, err := os.ReadDir("/proc/self/fdinfo"); err != nil {
		t.Skipf("no /proc/self/fdinfo: %v", err)
	}
	// The poller adds a link it has not seen yet at its next look, and leaves
	// a socket out of its set while a message waits there to be handed out (not
	// here: the ping-pong took every message): wait for the set, never for more.
	var wc [4]verbs.WorkCompletion
	for i := 0; ; i++ {
		sets := epollSetsHolding(l.q.ctx, want)
		if sets == 1 {
			return
		}
		if sets > 1 || i == 10000 {
			t.Fatalf("the link's socket is in %d epoll sets, want 1 (the poller's)", sets)
		}
		p.A.CQ.Poll(wc[:])
		time.Sleep(time.Millisecond)
	}
}

// epollSetsHolding counts this process's epoll sets whose targets include the
// inode named by want (" ino:%x "), from /proc/self/fdinfo. Descriptors of one
// set (the poller's duplicate, while it waits in Go's network poller) list the
// same targets and count once.
func epollSetsHolding(c *Context, want string) int {
	fds, _ := os.ReadDir("/proc/self/fdinfo")
	sets := map[string]bool{}
	for _, fd := range fds {
		if lookSetFD(c, fd.Name()) {
			continue
		}
		info, err := os.ReadFile("/proc/self/fdinfo/" + fd.Name())
		if err != nil {
			continue
		}
		var targets []string
		holds := false
		for _, line := range strings.Split(string(info), "\n") {
			if strings.HasPrefix(line, "tfd:") {
				targets = append(targets, line)
				holds = holds || strings.Contains(line+" ", want)
			}
		}
		if holds {
			sets[strings.Join(targets, "\n")] = true
		}
	}
	return len(sets)
}

// TestTCPPollerNotHeldByContextRounds: the context goroutine's own progress
// rounds do not count as callers polling: once the callers stop (one about to
// block kicks the poller), the poller goes back to waiting in the kernel on the
// sockets even while the context goroutine runs rounds of its own, instead of
// napping on for as long as those go on (a passive target's TCP arrivals would
// then wait for the nap).
func TestTCPPollerNotHeldByContextRounds(t *testing.T) {
	p, l, _ := settledTCPPair(t)
	c := l.q.ctx
	var wc [4]verbs.WorkCompletion
	p.A.CQ.Poll(wc[:]) // a caller polls: the poller naps
	c.wakePoller()     // and then is about to block
	deadline := time.Now().Add(5 * time.Second)
	for !c.tcp.asleep.Load() {
		if time.Now().After(deadline) {
			t.Fatal("5 s of the context goroutine's own rounds kept the TCP poller out of its kernel wait")
		}
		c.progress() // a round as the context goroutine runs it
	}
}

// TestTCPPollerWaitsOffTheProcessor: the poller's wait in the kernel for its
// sockets parks its goroutine in Go's network poller ("IO wait") and leaves its
// processor to the others. A wait made as a system call kept the processor
// until the runtime's monitor took it back (20 µs to 10 ms later): with
// GOMAXPROCS=1, as a launcher that binds each rank to one core gives, a rank
// spinning for its TCP arrivals waited that long each time the poller woke
// (put latency over TCP 11 µs one way against 3.5 µs with two processors).
func TestTCPPollerWaitsOffTheProcessor(t *testing.T) {
	_, l, _ := settledTCPPair(t)
	c := l.q.ctx
	c.wakePoller() // nobody polls: the poller waits in the kernel
	deadline := time.Now().Add(10 * time.Second)
	last := ""
	for {
		if c.tcp.asleep.Load() {
			if last = pollerState(c); last == "IO wait" {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the poller waits for its sockets in state %q, want \"IO wait\" (parked in Go's network poller)", last)
		}
		time.Sleep(time.Millisecond)
	}
}

// currentPoller returns c's poller, nil while it has none.
func currentPoller(c *Context) *tcpPoller {
	c.tcp.pmu.Lock()
	defer c.tcp.pmu.Unlock()
	return c.tcp.poller
}

// pollerState returns the state of the goroutine running c's tcpPoller.run,
// as the runtime's goroutine dump shows it ("syscall", "IO wait", ...).
func pollerState(c *Context) string {
	p := currentPoller(c)
	if p == nil {
		return "(no poller)"
	}
	return goroutineState(fmt.Sprintf("(*tcpPoller).run(%p", p), "(no poller)")
}

// TestTCPPollerLeavesGoNetpollerWhileNapping: once callers poll again and the
// poller naps (it does at the first arrival: it wakes, finds them polling),
// the duplicate of its epoll descriptor is out of Go's network poller (closed):
// registered there, every segment that arrives would wake the runtime's idle
// thread, for nobody.
func TestTCPPollerLeavesGoNetpollerWhileNapping(t *testing.T) {
	p, l, _ := settledTCPPair(t)
	c, want := pollerInNetpoller(t, l)
	// Callers poll, and a message arrives meanwhile: the poller wakes, finds
	// them polling, and naps while they go on, its duplicate closed.
	awaitPollerNapping(t, p, c, want, true)
}

// awaitPollerNapping makes p.A's callers poll and returns once the poller of
// c (p.A's context) naps: the socket named by want out of its set and, with
// dup, its duplicate closed (one descriptor opens the set). A poller parked in
// its wait stays there until something arrives, so it pings first. A
// goroutine keeps polling while it looks, and the looks do not stop the world
// (the poller's state comes from a dump of all goroutines, which does, so it
// is read only for the failure's message): a pause in the polling longer than
// a nap sends the poller back to its wait. It looks until a deadline, since
// how soon the poller runs is the scheduler's (on a loaded host a thread can
// wait tens of milliseconds for a core), with a ping-pong every 200 ms in case
// the poller went back to its wait (each leaves a receive posted: about 50 in
// 10 s).
func awaitPollerNapping(t *testing.T, p *verbstest.Pair, c *Context, want string, dup bool) {
	t.Helper()
	napping := func(n, dups int) bool { return n == 0 && (dups == 1 || !dup) }
	look := func() (n, dups int) {
		pl := currentPoller(c)
		if pl == nil {
			return -1, -1 // (no poller: nobody naps)
		}
		n, dups = epollFDsHolding(c, want), -1
		if dup {
			dups = pollerEpollCopies(c)
		}
		if currentPoller(c) != pl {
			return -1, -1 // (it ended or was replaced meanwhile)
		}
		return n, dups
	}
	// window pings, then looks for up to 200 ms while a goroutine polls.
	window := func() (n, dups int) {
		tcpPingPong(t, p, 1)
		stop, stopped := make(chan struct{}), make(chan struct{})
		defer func() {
			close(stop)
			<-stopped
		}()
		go func() {
			defer close(stopped)
			var wc [4]verbs.WorkCompletion
			for {
				select {
				case <-stop:
					return
				default:
				}
				for j := 0; j < 1000; j++ {
					p.A.CQ.Poll(wc[:])
				}
			}
		}()
		for next := time.Now().Add(200 * time.Millisecond); ; time.Sleep(time.Millisecond) {
			if n, dups = look(); napping(n, dups) || time.Now().After(next) {
				return n, dups
			}
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		n, dups := window()
		if napping(n, dups) {
			return
		}
		if time.Now().After(deadline) {
			if n < 0 {
				t.Fatal("callers polling: the context had no poller at the last look")
			}
			msg := fmt.Sprintf("callers polling (poller's state %q, read after the polling stopped): %d epoll descriptors hold the link's socket at the last look, want 0 (the socket out of the set)", pollerState(c), n)
			if dup {
				msg += fmt.Sprintf("; %d descriptors open the poller's epoll set, want 1 (the duplicate closed)", dups)
			}
			t.Fatal(msg)
		}
	}
}

// pollerEpollCopies counts this process's descriptors that open the epoll set
// of c's poller: 2 while its duplicate is open (registered in Go's network
// poller), 1 once it is closed. A descriptor opens the set when its fdinfo
// lists the poller's eventfd as a target: no other set watches that
// descriptor, and a duplicate's fdinfo is the set's.
func pollerEpollCopies(c *Context) int {
	p := currentPoller(c)
	if p == nil {
		return 0
	}
	target := fmt.Sprintf("tfd: %8d events:", p.evfd)
	return epollFDsListing(c, func(line string) bool { return strings.HasPrefix(line, target) })
}

// epollFDsHolding counts this process's epoll descriptors whose targets
// include the inode named by want (" ino:%x "), from /proc/self/fdinfo, but
// for c's look set (tcplookset.go), which holds the idle links.
func epollFDsHolding(c *Context, want string) int {
	return epollFDsListing(c, func(line string) bool {
		return strings.HasPrefix(line, "tfd:") && strings.Contains(line+" ", want)
	})
}

// epollFDsListing counts this process's descriptors but c's look set that have
// a line of /proc/self/fdinfo for which target is true.
func epollFDsListing(c *Context, target func(line string) bool) int {
	fds, _ := os.ReadDir("/proc/self/fdinfo")
	n := 0
	for _, fd := range fds {
		if lookSetFD(c, fd.Name()) {
			continue
		}
		info, err := os.ReadFile("/proc/self/fdinfo/" + fd.Name())
		if err != nil {
			continue
		}
		if slices.ContainsFunc(strings.Split(string(info), "\n"), target) {
			n++
		}
	}
	return n
}

// lookSetFD reports whether name (a descriptor's number) is c's look set.
func lookSetFD(c *Context, name string) bool {
	s := &c.tcp.set
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.live.Load() && name == strconv.Itoa(s.ep)
}

// settledTCPPair returns a pair joined over TCP whose links the poller serves,
// after a ping-pong, with nothing in flight (it skips where no poller serves
// them).
func settledTCPPair(t *testing.T) (*verbstest.Pair, *tcpLink, *tcpLink) {
	t.Helper()
	t.Setenv(EnvPath, "tcp")
	p := verbstest.NewPair(t, softEnv)
	la, lb := tcpPingPong(t, p, 1)
	if !la.viaPoller || !lb.viaPoller {
		t.Skip("the link is not served by the poller")
	}
	settle(t, p, la, lb)
	return p, la, lb
}

// pollerInNetpoller wakes the poller of l's context while nobody polls and
// waits until it waits in Go's network poller, its duplicate registered (two
// epoll descriptors hold l's socket). It returns the context and the socket's
// inode as epollFDsHolding looks for it.
func pollerInNetpoller(t *testing.T, l *tcpLink) (*Context, string) {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Fstat(l.fd, &st); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf(" ino:%x ", st.Ino)
	c := l.q.ctx
	c.wakePoller()
	deadline := time.Now().Add(10 * time.Second)
	for !c.tcp.asleep.Load() || pollerState(c) != "IO wait" || epollFDsHolding(c, want) != 2 || pollerEpollCopies(c) != 2 {
		if time.Now().After(deadline) {
			t.Fatalf("the poller does not wait in the network poller (state %q, %d epoll descriptors hold the socket, want 2; %d open its set, want 2)",
				pollerState(c), epollFDsHolding(c, want), pollerEpollCopies(c))
		}
		time.Sleep(time.Millisecond)
	}
	return c, want
}

// TestTCPPollerLeavesSocketsWhileNapping: while callers poll (the poller naps),
// the poller's epoll set holds none of the links' sockets: the callers read
// them, and an epoll watch costs every segment that arrives a callback in the
// kernel's delivery (an 8-byte ping-pong over loopback was 1–5 % slower with
// one watch more). When the callers stop, the poller watches them again, and
// what arrives is served.
func TestTCPPollerLeavesSocketsWhileNapping(t *testing.T) {
	p, la, _ := settledTCPPair(t)
	c := la.q.ctx
	var st unix.Stat_t
	if err := unix.Fstat(la.fd, &st); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf(" ino:%x ", st.Ino)
	awaitPollerNapping(t, p, c, want, false)
	// The callers stop: the poller watches the socket again (its set, and
	// its duplicate in Go's network poller), and serves what comes.
	pollerInNetpoller(t, la)
	tcpPingPong(t, p, 1)
}

// TestTCPPollerKeepsWatchingThroughKicks: kicks that end the poller's nap
// while callers go on polling (a socket filling in a bulk transfer, a receive
// posted for a waiting SEND) do not make it take the sockets out of its set
// and put them back at every kick: a call per link each way.
func TestTCPPollerKeepsWatchingThroughKicks(t *testing.T) {
	p, la, _ := settledTCPPair(t)
	c := la.q.ctx
	var wc [4]verbs.WorkCompletion
	for i := 0; i < 10; i++ {
		for j := 0; j < 100; j++ {
			p.A.CQ.Poll(wc[:])
		}
		time.Sleep(time.Millisecond)
	}
	changes := c.tcp.watchChanges.Load()
	for i := 0; i < 100; i++ {
		c.wakePoller()
		for j := 0; j < 100; j++ {
			p.A.CQ.Poll(wc[:])
		}
		time.Sleep(100 * time.Microsecond)
	}
	// (Naps that callers poll through, under load some dozen in the test,
	// unwatch and watch the link again: 2 each. Every kick did before.)
	if n := c.tcp.watchChanges.Load() - changes; n > 50 {
		t.Fatalf("100 kicks while callers poll: the poller changed its set %d times, want at most 50 (not 2 per kick)", n)
	}
}
