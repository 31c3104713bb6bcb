package soft

import (
	"fmt"
	"testing"
	"time"

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
	attr := func(s *verbstest.Side) verbs.QPAttr {
		return verbs.QPAttr{SendCQ: s.CQ, RecvCQ: s.CQ, MaxSendWR: 16, MaxRecvWR: 16, MaxSGE: 1}
	}
	for i := 0; i < n; i++ {
		qa, err := p.A.PD.CreateQP(attr(p.A))
		if err != nil {
			t.Fatal(err)
		}
		qb, err := p.B.PD.CreateQP(attr(p.B))
		if err != nil {
			t.Fatal(err)
		}
		if err := qa.Connect(qb.Address()); err != nil {
			t.Fatal(err)
		}
		if err := qb.Connect(qa.Address()); err != nil {
			t.Fatal(err)
		}
		as, bs = append(as, qa.(*qp)), append(bs, qb.(*qp))
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
	const polls = 200
	before := looksOf(c)
	var wc [4]verbs.WorkCompletion
	for i := 0; i < polls; i++ {
		if _, err := p.A.CQ.Poll(wc[:]); err != nil {
			t.Fatal(err)
		}
	}
	if n := looksOf(c) - before; n > polls+extra {
		t.Fatalf("%d polls over %d idle links made %d looks, want at most %d (one per round)", polls, extra+1, n, polls+extra)
	}

	// A SEND on the last idle link is received by the spinning caller.
	buf := p.A.Reg(t, 64, verbs.AccessLocalWrite, 3)
	src := p.B.Reg(t, 64, verbs.AccessLocalWrite, 4)
	qa, qb := as[extra-1], bs[extra-1]
	if err := qa.PostRecv([]verbs.RecvWR{{ID: 11, SG: []verbs.SGE{buf.SGE(0, 8)}}}); err != nil {
		t.Fatal(err)
	}
	if err := qb.PostSend([]verbs.SendWR{{ID: 12, Opcode: verbs.OpSend, SG: []verbs.SGE{src.SGE(0, 8)}}}); err != nil {
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
}

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
