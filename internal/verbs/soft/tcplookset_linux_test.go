package soft

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/goportals/goportals/internal/verbs"
	"github.com/goportals/goportals/internal/verbs/verbstest"
)

// idleLinks joins n more queue pairs of p's two contexts over TCP (on the
// pair's queues) and starts their links with a SEND each way, which B's and
// A's receives take. It returns A's and B's new queue pairs.
func idleLinks(t testing.TB, p *verbstest.Pair, n int) (as, bs []*qp) {
	t.Helper()
	ba := p.A.Reg(t, 64, verbs.AccessLocalWrite, 1)
	bb := p.B.Reg(t, 64, verbs.AccessLocalWrite, 2)
	for i := 0; i < n; i++ {
		qa, qb := joinQPs(t, p.A, p.B)
		as, bs = append(as, qa), append(bs, qb)
		for _, x := range []struct {
			from, to verbs.QP
			fb, tb   *verbstest.Buffer
			fs, ts   *verbstest.Side
		}{{qa, qb, ba, bb, p.A, p.B}, {qb, qa, bb, ba, p.B, p.A}} {
			if err := x.to.PostRecv([]verbs.RecvWR{{ID: 7, SG: []verbs.SGE{x.tb.SGE(32, 8)}}}); err != nil {
				t.Fatal(err)
			}
			if err := x.from.PostSend([]verbs.SendWR{{ID: 8, Opcode: verbs.OpSend, Flags: verbs.SendSignaled, SG: []verbs.SGE{x.fb.SGE(0, 8)}}}); err != nil {
				t.Fatal(err)
			}
			x.fs.Wait(t, 1)
			x.ts.Wait(t, 1)
		}
	}
	for i := range as {
		if as[i].link == nil || bs[i].link == nil {
			t.Fatal("an extra queue pair is not joined over TCP")
		}
	}
	return as, bs
}

// looksOf sums the look system calls made at c's links' sockets: each link's
// own, and the context's looks at all its idle links at once.
func looksOf(c *Context) uint64 {
	n := c.tcp.set.looks.Load()
	if ls := c.links.Load(); ls != nil {
		for _, l := range *ls {
			n += l.nLooks.Load()
		}
	}
	return n
}

// TestTCPIdleLinksCostOneLook: a caller spinning on Poll over a context with
// many idle links (a rank's connections to quiet peers) makes one look at
// their readiness per round at most, not one per link: idle connections must
// not lengthen the rounds that wait for the busy one. What comes on an idle
// link is still found by the spinning caller.
func TestTCPIdleLinksCostOneLook(t *testing.T) {
	setForTest(t, &tcpPollGap, 0) // a look every round
	p, la, lb := settledTCPPair(t)
	const extra = 6
	as, bs := idleLinks(t, p, extra)
	settle(t, p, la, lb)
	c := la.q.ctx
	if ls := c.links.Load(); ls == nil || len(*ls) != extra+1 {
		t.Fatalf("context A has %d links, want %d", len(*c.links.Load()), extra+1)
	}
	for _, l := range *c.links.Load() {
		l.quiet.Store(1 << 31) // as if long idle
	}
	// Rounds are counted whoever makes them: the context's progress
	// goroutine makes some between its naps too, and a poll that finds it
	// in a round makes none.
	countRounds.Store(true)
	t.Cleanup(func() { countRounds.Store(false) })
	const want = 200
	// A late answer (under load) makes a link hot, and a hot link's read is
	// a look of its own every round, as it should: such a link is made idle
	// again. One that turns hot without having received is a failure.
	received := func(l *tcpLink) uint64 { return l.nReads.Load() - l.nEmpty.Load() }
	got := map[*tcpLink]uint64{}
	for _, l := range *c.links.Load() {
		got[l] = received(l)
	}
	before, r0 := looksOf(c), c.tcp.rounds.Load()
	var wc [4]verbs.WorkCompletion
	for deadline := time.Now().Add(10 * time.Second); c.tcp.rounds.Load()-r0 < want; {
		if time.Now().After(deadline) {
			t.Fatalf("%d rounds in 10 s of polls", c.tcp.rounds.Load()-r0)
		}
		for _, l := range *c.links.Load() {
			q := l.quiet.Load() // (before the count: a read that makes it hot counted first)
			n := received(l)
			if q <= tcpHotLooks {
				if n == got[l] {
					t.Fatalf("an idle link turned hot without receiving anything (quiet %d)", q)
				}
				l.quiet.Store(1 << 31)
			}
			got[l] = n
		}
		if _, err := p.A.CQ.Poll(wc[:]); err != nil {
			t.Fatal(err)
		}
	}
	looks, rounds := looksOf(c)-before, c.tcp.rounds.Load()-r0
	if looks > rounds+extra {
		t.Fatalf("%d rounds over %d idle links made %d looks, want at most %d (one per round)", rounds, extra+1, looks, rounds+extra)
	}
	if looks == 0 {
		t.Fatalf("%d rounds over %d idle links made no look", rounds, extra+1)
	}
	sendOnIdle(t, p, as[extra-1], bs[extra-1])
}

// sendOnIdle sends 8 bytes from qb to qa, whose context's links are all idle,
// and polls qa's queue until the receive completes: the spinning caller finds
// it through the context's look at its idle links (a receive the poller made
// between its naps does not count: up to 20 tries).
func sendOnIdle(t *testing.T, p *verbstest.Pair, qa, qb *qp) {
	t.Helper()
	buf := p.A.Reg(t, 64, verbs.AccessLocalWrite, 3)
	src := p.B.Reg(t, 64, verbs.AccessLocalWrite, 4)
	var wc [4]verbs.WorkCompletion
	for try := 0; ; try++ {
		if ls := qa.ctx.links.Load(); ls != nil {
			for _, l := range *ls {
				l.quiet.Store(1 << 31)
			}
		}
		reads := qa.link.setReads.Load()
		if err := qa.PostRecv([]verbs.RecvWR{{ID: 11, SG: []verbs.SGE{buf.SGE(0, 8)}}}); err != nil {
			t.Fatal(err)
		}
		if err := qb.PostSend([]verbs.SendWR{{ID: 12, Opcode: verbs.OpSend, Flags: verbs.SendSignaled, SG: []verbs.SGE{src.SGE(0, 8)}}}); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(hangGuard)
		for {
			k, err := p.A.CQ.Poll(wc[:])
			if err != nil {
				t.Fatal(err)
			}
			if k > 0 {
				if wc[0].ID != 11 || wc[0].Status != verbs.StatusSuccess {
					t.Fatalf("completion %+v, want the receive 11", wc[0])
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the SEND on an idle link was never received")
			}
		}
		p.B.Wait(t, 1) // the SEND's own completion
		if qa.link.setReads.Load() != reads {
			return
		}
		if try == 20 {
			t.Fatal("20 SENDs on an idle link: none was found by the context's look at its idle links")
		}
	}
}

// TestTCPLookSetOnDescriptorZero: the look set works whatever number its
// epoll descriptor gets, 0 too (a program that closed its standard input).
func TestTCPLookSetOnDescriptorZero(t *testing.T) {
	t.Setenv(EnvPath, "tcp")
	p := verbstest.NewPairOpts(t, softEnv, verbstest.PairOptions{NoConnect: true})
	c := p.A.QP.(*qp).ctx
	saved, err := unix.Dup(0)
	if err != nil {
		t.Skipf("dup(0): %v", err)
	}
	if err := unix.Close(0); err != nil {
		t.Fatal(err)
	}
	restored := false
	restore := func() {
		if !restored {
			restored = true
			p.A.Ctx.Close() // (its look set may hold descriptor 0)
			p.B.Ctx.Close()
			unix.Dup3(saved, 0, 0)
			unix.Close(saved)
		}
	}
	defer restore()
	// The next descriptor made is 0: the look set's, opened here first (a
	// link's start opens it too, when a socket has not taken 0 before).
	s := &c.tcp.set
	s.mu.Lock()
	if !s.tried {
		s.tried = true
		if ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC); err == nil {
			s.ep = ep
			s.live.Store(true)
		}
	}
	ep := s.ep
	s.mu.Unlock()
	if ep != 0 {
		t.Skipf("the look set got descriptor %d, not 0", ep)
	}
	if err := p.A.QP.Connect(p.B.QP.Address()); err != nil {
		t.Fatal(err)
	}
	if err := p.B.QP.Connect(p.A.QP.Address()); err != nil {
		t.Fatal(err)
	}
	tcpPingPong(t, p, 1)
	as, bs := idleLinks(t, p, 1)
	sendOnIdle(t, p, as[0], bs[0])
	if !s.live.Load() || s.ep != 0 {
		t.Fatalf("the look set moved off descriptor 0 (live %v, descriptor %d)", s.live.Load(), s.ep)
	}
	// The set closes with its context (and descriptor 0 with it: standard
	// input comes back after, not over the set).
	for _, c := range []verbs.Context{p.A.Ctx, p.B.Ctx} {
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if s.live.Load() {
		t.Fatal("the look set outlived its context")
	}
}

// TestTCPIdleLinkPacesItsWrites: an idle link whose frames wait for room in
// its socket (a large WRITE) is written at most once per tcpBulkGap by the
// callers' rounds, as a busy one is, not at every round.
func TestTCPIdleLinkPacesItsWrites(t *testing.T) {
	setForTest(t, &tcpBulkGap, time.Hour)
	p, la, _ := settledTCPPair(t)
	if !la.inSet {
		t.Skip("the link is not in a look set")
	}
	la.quiet.Store(1 << 31) // idle
	const size = 64 << 20
	src := p.A.Reg(t, size, verbs.AccessLocalWrite, 1)
	dst := p.B.Reg(t, size, verbs.AccessLocalWrite|verbs.AccessRemoteWrite, 0)
	p.A.PostSend(t, verbs.SendWR{ID: 1, Opcode: verbs.OpRDMAWrite, Flags: verbs.SendSignaled,
		SG: []verbs.SGE{src.SGE(0, size)}, RemoteAddr: dst.Addr(0), RKey: dst.MR.RKey()})
	if !la.txWait.Load() {
		t.Skip("the WRITE went out whole: the socket never filled")
	}
	writes := la.nWrites.Load()
	var wc [4]verbs.WorkCompletion
	for i := 0; i < 1000; i++ {
		p.A.CQ.Poll(wc[:])
	}
	// (The rounds write once in the gap; the poller, when it waits in the
	// kernel between its naps, writes as room comes: a few times.)
	if n := la.nWrites.Load() - writes; n > 50 {
		t.Fatalf("1000 polls of an idle link whose frames wait for room: %d writes, want at most 50 (one per tcpBulkGap, and the poller's)", n)
	}
}

// TestTCPLookSetLeavesPacedLinks: the context's look at its idle links reads
// none of the others: a link amid a large incoming frame, whose rounds leave
// its socket alone a while (tcpBulkIdleGap), is not read by it, however
// readable.
func TestTCPLookSetLeavesPacedLinks(t *testing.T) {
	setForTest(t, &tcpPollGap, 0)
	setHotLooks(t, 1<<30)
	setForTest(t, &tcpBulkHold, time.Hour)
	setForTest(t, &tcpBulkIdleGap, time.Hour)
	p, la, lb := settledTCPPair(t)
	if !lb.inSet {
		t.Skip("the link is not in a look set")
	}
	idleLinks(t, p, 1)
	settle(t, p, la, lb)
	const size = 1 << 20
	dst := p.B.Reg(t, size, verbs.AccessLocalWrite|verbs.AccessRemoteWrite, 0)
	// A large WRITE's first part, written on A's socket as A's link would.
	var hdr [frameLen]byte
	f := frame{kind: frWrite, token: 1 << 40, raddr: dst.Addr(0), rkey: dst.MR.RKey(), n: size}
	f.put(hdr[:])
	part := make([]byte, 4<<10)
	write := func(b ...[]byte) {
		t.Helper()
		la.txMu.Lock()
		_, err := writev(la.fd, b)
		la.unlockTx()
		if err != nil {
			t.Fatal(err)
		}
	}
	write(hdr[:], part)
	for i := 0; readable(lb.fd); i++ {
		if i == 1e6 {
			t.Fatal("the part of the frame is not read")
		}
		lb.nextLook.Store(0)
		p.B.CQ.Poll(wc4())
	}
	for i := 0; lb.nextLook.Load() == 0; i++ {
		if i == 1e5 {
			t.Fatal("the link is not paced amid the frame")
		}
		p.B.CQ.Poll(wc4()) // (an empty read starts the gap)
	}
	// More of it comes: lb's own rounds leave it for tcpBulkIdleGap; the
	// look at the set, made every round for the idle link, must too. (lb
	// counts as idle, its socket in the set, as a link whose large frame
	// trickles in slowly would: else the look would pass it over as hot, and
	// what is checked here would never be put to the test.)
	lb.quiet.Store(1 << 31)
	if !lb.q.ctx.setArm(lb) {
		t.Skip("the link's socket could not join the look set")
	}
	// The poller, waiting in the kernel, serves a readable link whatever its
	// pacing, and would read the part before the check below: callers poll,
	// so that it naps instead (woken, it finds them polling). Under load the
	// nap may end before the part comes: another part then.
	rxLeft := func() uint32 {
		lb.rxMu.Lock()
		defer lb.rxMu.Unlock()
		return lb.rx.left
	}
	c := lb.q.ctx
	for try := 0; ; try++ {
		p.B.CQ.Poll(wc4())
		c.wakePoller()
		for i := 0; c.tcp.asleep.Load() && i < 1e5; i++ {
			runtime.Gosched()
		}
		left, setReads := rxLeft(), lb.setReads.Load()
		write(part)
		arrived, taken := false, false
		for i := 0; i < 1e6 && !arrived && !taken; i++ {
			arrived = readable(lb.fd)
			taken = !arrived && rxLeft() != left
		}
		if arrived {
			break
		}
		if n := lb.setReads.Load() - setReads; n != 0 {
			t.Fatalf("a link amid a large frame, in its gap: the look at the set read it (%d times)", n)
		}
		if try == 20 {
			t.Fatalf("the next part does not arrive on the socket in 21 tries (the poller read it first: %v)", taken)
		}
	}
	// (The poller may read it, had it been waiting in the kernel: the look
	// at the set must not.)
	set := &lb.q.ctx.tcp.set
	reads := lb.setReads.Load()
	looks := set.looks.Load()
	for i := 0; i < hotPolls && set.looks.Load()-looks < 100; i++ {
		for _, l := range *lb.q.ctx.links.Load() {
			// Idle (again: a late answer may arrive on it under load):
			// B's rounds look at the set.
			l.quiet.Store(1 << 31)
		}
		p.B.CQ.Poll(wc4())
	}
	if n := set.looks.Load() - looks; n < 100 {
		for _, l := range *lb.q.ctx.links.Load() {
			t.Logf("link %p (lb %v): quiet %d inSet %v nextLook %d (now %d) stalled %v rbLeft %v msgHeld %v txWait %v ackDue %d",
				l, l == lb, l.quiet.Load(), l.inSet, l.nextLook.Load(), tcpClock(), l.stalled.Load(), l.rbLeft.Load(), l.msgHeld.Load(), l.txWait.Load(), l.ackDue.Load())
		}
		t.Fatalf("%d polls beside an idle link made %d looks at the set, want 100", hotPolls, n)
	}
	if n := lb.setReads.Load() - reads; n != 0 {
		t.Fatalf("a link amid a large frame, in its gap: the look at the set read it %d times in 100 looks, want never", n)
	}
}

// wc4 is room for four completions.
func wc4() []verbs.WorkCompletion { return make([]verbs.WorkCompletion, 4) }

// BenchmarkTCPPingPongBesideIdleLinks: an 8-byte SEND ping-pong over one link
// of two contexts that have idle links besides (a rank's connections to quiet
// peers); ns/op is a round trip.
func BenchmarkTCPPingPongBesideIdleLinks(b *testing.B) {
	for _, idle := range []int{0, 8, 32} {
		b.Run(fmt.Sprintf("idle=%d", idle), func(b *testing.B) {
			b.Setenv(EnvPath, "tcp")
			p := verbstest.NewPair(b, softEnv)
			tcpPingPong(b, p, 1)
			idleLinks(b, p, idle)
			tcpPingPong(b, p, 1000) // every link idle but this one
			b.ResetTimer()
			tcpPingPong(b, p, b.N)
		})
	}
}

// lookSetHolds reports whether c's look set holds l's socket (its epoll
// descriptor's fdinfo names the socket's inode).
func lookSetHolds(t *testing.T, c *Context, l *tcpLink) bool {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Fstat(l.fd, &st); err != nil {
		t.Fatal(err)
	}
	s := &c.tcp.set
	s.mu.Lock()
	ep, live := s.ep, s.live.Load()
	s.mu.Unlock()
	if !live {
		return false
	}
	info, err := os.ReadFile(fmt.Sprintf("/proc/self/fdinfo/%d", ep))
	if err != nil {
		t.Skipf("no fdinfo: %v", err)
	}
	want := fmt.Sprintf(" ino:%x ", st.Ino)
	for _, line := range strings.Split(string(info), "\n") {
		if strings.HasPrefix(line, "tfd:") && strings.Contains(line+" ", want) {
			return true
		}
	}
	return false
}

// TestTCPHotLinkLeavesLookSet: a link's socket is in the context's look set
// only while the link is idle: a link that receives is read by its own rounds,
// and a second epoll watch on its socket would cost each arriving segment a
// callback in the kernel's delivery.
func TestTCPHotLinkLeavesLookSet(t *testing.T) {
	// A hot link turns idle again after tcpHotLooks empty looks, and rejoins
	// the set: under load the rounds of the context's goroutine and of the
	// poller made all of them between two of this test's looks (quiet 257,
	// armed again), 3 times in 100 runs beside two busy loops. It stays hot
	// here.
	setHotLooks(t, 1<<30)
	p, la, _ := settledTCPPair(t)
	if !la.inSet {
		t.Skip("the link has no look set")
	}
	c := la.q.ctx
	la.quiet.Store(1 << 31) // idle
	for i := 0; !la.armed.Load(); i++ {
		if i == hotPolls {
			t.Fatal("an idle link never joined the look set")
		}
		p.A.CQ.Poll(wc4())
	}
	if !lookSetHolds(t, c, la) {
		t.Fatal("an idle link is armed, but its socket is not in the look set")
	}
	tcpPingPong(t, p, 1) // it receives: hot
	for i := 0; la.armed.Load(); i++ {
		if i == hotPolls {
			t.Fatalf("a link that received again stays in the look set: quiet %d, reads %d (%d empty), looks %d, set looks %d, nextLook %d (now %d), msgHeld %v",
				la.quiet.Load(), la.nReads.Load(), la.nEmpty.Load(), la.nLooks.Load(), c.tcp.set.looks.Load(),
				la.nextLook.Load(), tcpClock(), la.msgHeld.Load())
		}
		p.A.CQ.Poll(wc4())
	}
	if lookSetHolds(t, c, la) {
		t.Fatal("a link disarmed, but its socket is still in the look set")
	}
}

// TestTCPIdleLinkLookedAtAloneWhenArmFails: an idle link whose socket the
// kernel refuses to add to the look set is looked at alone, and what comes on
// it is received; the add is not tried again at every round.
func TestTCPIdleLinkLookedAtAloneWhenArmFails(t *testing.T) {
	testArmFails = true // (before the pair: its goroutines read it)
	t.Cleanup(func() { testArmFails = false })
	setForTest(t, &tcpPollGap, 0)
	p, la, lb := settledTCPPair(t)
	la.quiet.Store(1 << 31) // idle
	for i := 0; !la.noArm.Load(); i++ {
		if i == hotPolls {
			t.Fatal("an idle link never tried the look set")
		}
		p.A.CQ.Poll(wc4())
	}
	if la.armed.Load() {
		t.Fatal("armed though the kernel refused")
	}
	if n := pollCounting(t, p.A, &la.nLooks, 100); n < 50 {
		t.Fatalf("100 polls of an idle link the look set refused, no gap: %d looks at it, want one a round", n)
	}
	buf := p.A.Reg(t, 64, verbs.AccessLocalWrite, 3)
	src := p.B.Reg(t, 64, verbs.AccessLocalWrite, 4)
	p.A.PostRecv(t, 11, buf.SGE(0, 8))
	p.B.PostSend(t, verbs.SendWR{ID: 12, Opcode: verbs.OpSend, Flags: verbs.SendSignaled, SG: []verbs.SGE{src.SGE(0, 8)}})
	// (The pair's ping-pong left a receive posted: the SEND may take it.)
	if w := p.A.Wait(t, 1); w[0].Opcode != verbs.WCRecv || w[0].Status != verbs.StatusSuccess {
		t.Fatalf("completion %+v, want a receive", w[0])
	}
	p.B.Wait(t, 1)
	_ = lb
}
