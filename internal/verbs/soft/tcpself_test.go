package soft

import (
	"bytes"
	"testing"

	"github.com/goportals/goportals/internal/verbs"
	"github.com/goportals/goportals/internal/verbs/verbstest"
)

// joinQPs creates a queue pair on each of sa and sb (on their queues) and
// connects the two.
func joinQPs(t testing.TB, sa, sb *verbstest.Side) (*qp, *qp) {
	t.Helper()
	attr := func(s *verbstest.Side) verbs.QPAttr {
		return verbs.QPAttr{SendCQ: s.CQ, RecvCQ: s.CQ, MaxSendWR: 16, MaxRecvWR: 16, MaxSGE: 1}
	}
	qa, err := sa.PD.CreateQP(attr(sa))
	if err != nil {
		t.Fatal(err)
	}
	qb, err := sb.PD.CreateQP(attr(sb))
	if err != nil {
		t.Fatal(err)
	}
	if err := qa.Connect(qb.Address()); err != nil {
		t.Fatal(err)
	}
	if err := qb.Connect(qa.Address()); err != nil {
		t.Fatal(err)
	}
	return qa.(*qp), qb.(*qp)
}

// With PTL_SOFT_PATH=tcp, two queue pairs of one context (an NI's connection
// to itself) stay in the process: forcing TCP between ranks must not give a
// rank a TCP stream to itself, whose socket its poll rounds would then read
// for nothing. Two contexts of the process (the pair's) still meet over TCP.
func TestForcedTCPLeavesOwnContextInProcess(t *testing.T) {
	t.Setenv(EnvPath, "tcp")
	p := verbstest.NewPair(t, softEnv)
	if p.A.QP.(*qp).link == nil || p.B.QP.(*qp).link == nil {
		t.Fatal("two contexts of one process not joined over TCP")
	}
	c := p.A.QP.(*qp).ctx
	a, b := joinQPs(t, p.A, p.A)
	if a.link != nil || b.link != nil {
		t.Fatalf("queue pairs of one context joined over TCP (links %v, %v)", a.link != nil, b.link != nil)
	}
	if ls := c.links.Load(); ls != nil {
		for _, l := range *ls {
			if l.q == a || l.q == b {
				t.Fatal("the context polls a TCP link of its connection to itself")
			}
		}
	}

	// The in-process connection carries data.
	src := p.A.Reg(t, 64, verbs.AccessLocalWrite, 0x5a)
	dst := p.A.Reg(t, 64, verbs.AccessLocalWrite|verbs.AccessRemoteWrite, 0)
	if err := a.PostSend([]verbs.SendWR{{ID: 1, Opcode: verbs.OpRDMAWrite, Flags: verbs.SendSignaled,
		SG: []verbs.SGE{src.SGE(0, 64)}, RemoteAddr: dst.Addr(0), RKey: dst.MR.RKey()}}); err != nil {
		t.Fatal(err)
	}
	if w := p.A.Wait(t, 1); w[0].Status != verbs.StatusSuccess {
		t.Fatalf("completion %+v", w[0])
	}
	if !bytes.Equal(dst.Mem, src.Mem) {
		t.Fatal("the write did not land")
	}
}
