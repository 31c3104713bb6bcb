package soft

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/goportals/goportals/internal/verbs"
	"github.com/goportals/goportals/internal/verbs/verbstest"
)

// TestTCPPollLooksBeforeReading: a caller spinning on Poll over an idle link,
// with no gap between the rounds' looks, makes no read of the empty socket once
// the link has gone tcpHotLooks rounds without receiving: the rounds look at
// its readiness first (a read that finds nothing takes the socket's lock, which
// the delivery of the next segment waits for).
func TestTCPPollLooksBeforeReading(t *testing.T) {
	setForTest(t, &tcpPollGap, 0)
	p, l, _ := settledTCPPair(t)
	// Hot no more: poll until tcpHotLooks rounds found nothing (not a fixed
	// count of polls: under load many polls skip their round, the context's
	// goroutine in one of its own).
	var wc [4]verbs.WorkCompletion
	for i := 0; l.quiet.Load() <= tcpHotLooks; i++ {
		if i == hotPolls {
			t.Fatalf("%d polls of an idle link: still hot (%d rounds found nothing)", hotPolls, l.quiet.Load())
		}
		p.A.CQ.Poll(wc[:])
	}
	// (The poller may act once on a readiness it learned before the link
	// settled, and find the socket emptied by a poll round: one empty read.)
	if n := emptyReads(t, p.A, l, 1000); n > 1 {
		t.Fatalf("1000 polls of an idle link: %d reads found nothing, want at most 1", n)
	}
}

// TestTCPHotLinkReadsAtOnce: a link that just received is read at once by the
// rounds, without a look at its readiness first (what it waits for, the answer
// or the next request of a ping-pong, is likely close, and the look would be
// one more system call between its arrival and its reading); each such read
// counts as the link's look.
func TestTCPHotLinkReadsAtOnce(t *testing.T) {
	setForTest(t, &tcpPollGap, 0)
	setHotLooks(t, 1<<30)
	t.Setenv(EnvPath, "tcp")
	p := verbstest.NewPair(t, softEnv)
	l, lb := tcpPingPong(t, p, 1)
	settle(t, p, l, lb)
	hot(l)
	looks := l.nLooks.Load()
	if n := pollReaching(t, p.A, &l.nEmpty, hotLooksMin); n < hotLooksMin {
		t.Fatalf("%d polls of a hot link: %d reads found nothing, want at least %d (the rounds look before they read)", hotPolls, n, hotLooksMin)
	}
	// (Most of them: an empty read made by the poller's goroutine is no
	// round's look.)
	if n := l.nLooks.Load() - looks; n < hotLooksMin*4/5 {
		t.Fatalf("%d empty reads of a hot link counted %d looks", hotLooksMin, n)
	}
}

// emptyReads polls s's queue n times and returns how many reads of the socket
// of l found nothing meanwhile.
func emptyReads(t *testing.T, s *verbstest.Side, l *tcpLink, n int) uint64 {
	t.Helper()
	return pollCounting(t, s, &l.nEmpty, n)
}

// hotLooksMin is how many looks (or reads) a link that is looked at every
// round must make within hotPolls polls (see pollReaching); a paced link, its
// gap set to an hour by the test, looks at most twice however long it is
// polled.
const (
	hotLooksMin = 50
	hotPolls    = 100000
)

// pollReaching polls s's queue until c grew by want, or hotPolls times, and
// returns how much c grew. Not every poll looks: a Poll that finds the
// context's progress goroutine in a round of its own skips its round, and a
// round that finds another one reading the socket reads nothing; under load
// the other one may hold the socket for milliseconds (descheduled), so the
// polls that look are counted over many, not over a fixed hundred.
func pollReaching(t *testing.T, s *verbstest.Side, c *atomic.Uint64, want uint64) uint64 {
	t.Helper()
	before := c.Load()
	var wc [4]verbs.WorkCompletion
	for i := 0; i < hotPolls && c.Load()-before < want; i++ {
		if _, err := s.CQ.Poll(wc[:]); err != nil {
			t.Fatal(err)
		}
	}
	return c.Load() - before
}

// pollIdle polls s's queue n times and returns how many looks at the socket
// of l those rounds made.
func pollIdle(t *testing.T, s *verbstest.Side, l *tcpLink, n int) uint64 {
	t.Helper()
	// (An idle link is looked at with the context's others, in its look
	// set: l is the context's one link in these tests.)
	set := &l.q.ctx.tcp.set.looks
	before := set.Load()
	return pollCounting(t, s, &l.nLooks, n) + set.Load() - before
}

// pollCounting polls s's queue n times and returns how much c grew meanwhile.
func pollCounting(t *testing.T, s *verbstest.Side, c *atomic.Uint64, n int) uint64 {
	t.Helper()
	before := c.Load()
	var wc [4]verbs.WorkCompletion
	for i := 0; i < n; i++ {
		if _, err := s.CQ.Poll(wc[:]); err != nil {
			t.Fatal(err)
		}
	}
	return c.Load() - before
}

// settle polls both sides until no answer waits to go on either link and
// neither socket holds data: nothing is in flight.
func settle(t *testing.T, p *verbstest.Pair, la, lb *tcpLink) {
	t.Helper()
	var wc [4]verbs.WorkCompletion
	for i := 0; ; i++ {
		if la.ackDue.Load() == 0 && lb.ackDue.Load() == 0 && !la.txWait.Load() && !lb.txWait.Load() &&
			!readable(la.fd) && !readable(lb.fd) {
			return
		}
		if i == 1e6 {
			t.Fatal("the links do not settle")
		}
		la.nextLook.Store(0)
		lb.nextLook.Store(0)
		p.A.CQ.Poll(wc[:])
		p.B.CQ.Poll(wc[:])
	}
}

// setHotLooks sets tcpHotLooks for the test (before the pair exists: its
// goroutines read it until it closes).
func setHotLooks(t *testing.T, v uint32) {
	old := tcpHotLooks
	tcpHotLooks = v
	t.Cleanup(func() { tcpHotLooks = old })
}

// hot marks the links as having just received (tcpHotLooks set high by the
// test): a look that finds nothing leaves no gap, and a ping-pong over them
// does not wait for the poller.
func hot(ls ...*tcpLink) {
	for _, l := range ls {
		l.quiet.Store(0)
		l.nextLook.Store(0)
	}
}

// TestTCPPollPacesLooksInBulk: while a large frame is partly received (the
// rest of it is on its way), a caller spinning on Poll looks at the link's
// empty socket once per tcpBulkIdleGap (a look per round would be a system call
// per round for all of the transfer); a link that carries only small frames, or
// whose large frames are all done, is looked at every round: what it waits for
// may be an answer (the ACK of a large WRITE, the next request of a ping-pong),
// which a gap would delay by as much.
func TestTCPPollPacesLooksInBulk(t *testing.T) {
	// (The knobs are set before the pair exists: their goroutines read them
	// until the pair is closed.)
	setForTest(t, &tcpPollGap, time.Hour)
	setHotLooks(t, 1<<30)
	setForTest(t, &tcpBulkHold, time.Hour)
	setForTest(t, &tcpBulkIdleGap, time.Hour)
	t.Setenv(EnvPath, "tcp")
	p := verbstest.NewPair(t, softEnv)
	hot(p.A.QP.(*qp).link, p.B.QP.(*qp).link)
	la, lb := tcpPingPong(t, p, 10) // small frames only
	if !la.viaPoller || !lb.viaPoller {
		t.Skip("the links are not served by the poller")
	}
	settle(t, p, la, lb)
	hot(la, lb)
	// (The context's progress goroutine may look too, between its naps.)
	if n := pollReaching(t, p.B, &lb.nLooks, hotLooksMin); n < hotLooksMin {
		t.Fatalf("small frames only: %d polls of an idle link looked %d times, want %d or more", hotPolls, n, hotLooksMin)
	}
	const size = 1 << 20
	src := p.A.Reg(t, size, verbs.AccessLocalWrite, 1)
	dst := p.B.Reg(t, size, verbs.AccessLocalWrite|verbs.AccessRemoteWrite, 0)
	p.A.PostSend(t, verbs.SendWR{ID: 1, Opcode: verbs.OpRDMAWrite, Flags: verbs.SendSignaled,
		SG: []verbs.SGE{src.SGE(0, size)}, RemoteAddr: dst.Addr(0), RKey: dst.MR.RKey()})
	if w := p.A.Wait(t, 1); w[0].Status != verbs.StatusSuccess {
		t.Fatalf("completion %+v", w[0])
	}
	settle(t, p, la, lb)
	hot(la, lb)
	for _, c := range []struct {
		name string
		s    *verbstest.Side
		l    *tcpLink
	}{{"target", p.B, lb}, {"initiator", p.A, la}} {
		if n := pollReaching(t, c.s, &c.l.nLooks, hotLooksMin); n < hotLooksMin {
			t.Errorf("%s after a large WRITE completed: %d polls of an idle link looked %d times, want %d or more", c.name, hotPolls, n, hotLooksMin)
		}
	}
	// A large WRITE whose first part only has come: the header and a little
	// of the payload, written on A's socket as A's link would.
	var hdr [frameLen]byte
	f := frame{kind: frWrite, token: 1 << 40, raddr: dst.Addr(0), rkey: dst.MR.RKey(), n: size}
	f.put(hdr[:])
	part := make([]byte, 4<<10)
	la.txMu.Lock()
	m, err := writev(la.fd, [][]byte{hdr[:], part})
	la.unlockTx()
	if err != nil || m != len(hdr)+len(part) {
		t.Fatalf("writev: %d, %v", m, err)
	}
	for i := 0; readable(lb.fd); i++ {
		if i == 1e6 {
			t.Fatal("the part of the frame is not read")
		}
		lb.nextLook.Store(0)
		var wc [4]verbs.WorkCompletion
		p.B.CQ.Poll(wc[:])
	}
	lb.nextLook.Store(0)
	if n := pollIdle(t, p.B, lb, 1000); n > 2 {
		t.Errorf("target amid a large frame: 1000 polls of an idle link looked %d times, want at most 2", n)
	}
}

// TestTCPPollPacesIdleLooks: a caller spinning on Poll looks at a link that
// has received nothing for a while (a quiet peer's, say, beside the one that
// carries its traffic) once per tcpPollGap, not every round: a
// look per round at every idle link lengthens the round, and with it the
// arrival of what comes on the busy link. A link that has just received is
// looked at every round.
func TestTCPPollPacesIdleLooks(t *testing.T) {
	setForTest(t, &tcpPollGap, time.Hour)
	setHotLooks(t, 1<<30)
	t.Setenv(EnvPath, "tcp")
	p := verbstest.NewPair(t, softEnv)
	hot(p.A.QP.(*qp).link, p.B.QP.(*qp).link)
	la, lb := tcpPingPong(t, p, 10)
	if !la.viaPoller {
		t.Skip("the link is not served by the poller")
	}
	settle(t, p, la, lb)
	hot(la, lb)
	if n := pollReaching(t, p.A, &la.nLooks, hotLooksMin); n < hotLooksMin {
		t.Fatalf("a link that just received: %d polls looked %d times, want %d or more", hotPolls, n, hotLooksMin)
	}
	la.quiet.Store(1 << 31) // as if it had long been idle
	if n := pollIdle(t, p.A, la, 1000); n > 2 {
		t.Fatalf("a link idle for longer than tcpHotLooks: 1000 polls looked %d times, want at most 2", n)
	}
}

// TestTCPHotLookCountsOnlyReads: a hot link's round that finds another round
// reading the socket (its receive lock taken) makes no read, and counts no
// look: a look is a system call made at the socket. (Under load, the context's
// progress goroutine descheduled amid its read made a spinning caller's rounds
// count a look each while none read, and a bulk transfer's pacing seemed not
// to hold.)
func TestTCPHotLookCountsOnlyReads(t *testing.T) {
	setForTest(t, &tcpPollGap, 0)
	setHotLooks(t, 1<<30)
	p, la, _ := settledTCPPair(t)
	la.rxMu.Lock() // another round reads
	hot(la)
	reads := la.nReads.Load()
	n := pollIdle(t, p.A, la, 100)
	r := la.nReads.Load() - reads // (before the unlock: the poller may read after it)
	la.rxMu.Unlock()
	if r != 0 {
		t.Fatalf("%d reads while another round held the receive lock", r)
	}
	if n != 0 {
		t.Fatalf("100 polls of a hot link whose receive lock another round holds counted %d looks, want 0 (no read was made)", n)
	}
	hot(la)
	if n := pollReaching(t, p.A, &la.nLooks, hotLooksMin); n < hotLooksMin {
		t.Fatalf("%d polls of a hot link: %d looks, want at least %d", hotPolls, n, hotLooksMin)
	}
}

// TestTCPRoundPausesAfterEmptyHotRead: a caller's round that read a hot link's
// socket, found nothing and received nothing pauses (tcpHotPause) before the
// next round reads again; a round over an idle link, which looks at its
// readiness instead of reading, does not; nor any round with tcpHotPause 0.
func TestTCPRoundPausesAfterEmptyHotRead(t *testing.T) {
	t.Run("pauses", testRoundPauses)
	t.Run("off", func(t *testing.T) {
		setForTest(t, &tcpHotPause, 0) // (before the pair: its goroutines read it)
		setHotLooks(t, 1<<30)
		t.Setenv(EnvPath, "tcp")
		p := verbstest.NewPair(t, softEnv)
		la, lb := tcpPingPong(t, p, 1)
		settle(t, p, la, lb)
		hot(la)
		pauses := la.q.ctx.tcp.hotPauses.Load()
		pollReaching(t, p.A, &la.nEmpty, hotLooksMin)
		if n := la.q.ctx.tcp.hotPauses.Load() - pauses; n != 0 {
			t.Fatalf("tcpHotPause 0: %d pauses, want 0", n)
		}
	})
}

func testRoundPauses(t *testing.T) {
	setForTest(t, &tcpPollGap, 0)
	setHotLooks(t, 1<<30)
	p, la, _ := settledTCPPair(t)
	c := la.q.ctx
	hot(la)
	pauses := c.tcp.hotPauses.Load()
	if n := pollReaching(t, p.A, &la.nEmpty, hotLooksMin); n < hotLooksMin {
		t.Fatalf("%d empty reads of a hot link in %d polls", n, hotPolls)
	}
	if n := c.tcp.hotPauses.Load() - pauses; n < hotLooksMin*4/5 {
		t.Fatalf("%d empty reads of a hot link made %d pauses", hotLooksMin, n)
	}
	la.quiet.Store(1 << 31) // idle: looked at, not read
	pauses = c.tcp.hotPauses.Load()
	if n := pollIdle(t, p.A, la, 1000); n < 100 {
		t.Fatalf("1000 polls of an idle link with no gap looked %d times", n)
	}
	if n := c.tcp.hotPauses.Load() - pauses; n != 0 {
		t.Fatalf("1000 polls of an idle link made %d pauses, want 0", n)
	}
}
