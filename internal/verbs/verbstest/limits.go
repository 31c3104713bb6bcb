package verbstest

import (
	"testing"
	"time"

	"github.com/goportals/goportals/internal/verbs"
)

// testSyncErrors checks the errors PostSend, PostRecv, RegMR and CreateCQ return
// synchronously for bad arguments and exhausted queues.
func testSyncErrors(t *testing.T, env Env) {
	p := NewPairOpts(t, env, PairOptions{MaxSendWR: 4, MaxRecvWR: 4, NoConnect: true})
	attr := p.A.Ctx.Attr()
	buf := p.A.Reg(t, 64, rw, 0)

	wantErr(t, "post send before connect",
		p.A.QP.PostSend([]verbs.SendWR{{Opcode: verbs.OpSend, SG: []verbs.SGE{buf.SGE(0, 8)}}}), verbs.ErrQPState)
	must(t, "post recv before connect", p.A.QP.PostRecv([]verbs.RecvWR{{ID: 1, SG: []verbs.SGE{buf.SGE(0, 8)}}}))
	must(t, "connect A", p.A.QP.Connect(p.B.QP.Address()))
	must(t, "connect B", p.B.QP.Connect(p.A.QP.Address()))
	wantErr(t, "second connect", p.A.QP.Connect(p.B.QP.Address()), verbs.ErrQPState)

	tooMany := make([]verbs.SGE, attr.MaxSGE+1)
	for i := range tooMany {
		tooMany[i] = buf.SGE(0, 1)
	}
	wantErr(t, "send with too many SGEs",
		p.A.QP.PostSend([]verbs.SendWR{{Opcode: verbs.OpSend, SG: tooMany}}), verbs.ErrInvalidArgument)
	wantErr(t, "receive with too many SGEs",
		p.A.QP.PostRecv([]verbs.RecvWR{{SG: tooMany}}), verbs.ErrInvalidArgument)
	wantErr(t, "unknown opcode",
		p.A.QP.PostSend([]verbs.SendWR{{Opcode: verbs.Opcode(200), SG: []verbs.SGE{buf.SGE(0, 8)}}}), verbs.ErrInvalidArgument)
	if attr.Atomics {
		wantErr(t, "atomic with a 4-byte result",
			p.A.QP.PostSend([]verbs.SendWR{{Opcode: verbs.OpAtomicFetchAdd, SG: []verbs.SGE{buf.SGE(0, 4)}}}),
			verbs.ErrInvalidArgument)
	}

	// B has no receive posted: A's SENDs wait and fill A's send queue of 4.
	var wrs []verbs.SendWR
	for i := range 5 {
		wrs = append(wrs, verbs.SendWR{ID: uint64(i), Opcode: verbs.OpSend, Flags: verbs.SendSignaled,
			SG: []verbs.SGE{buf.SGE(0, 8)}})
	}
	err := p.A.QP.PostSend(wrs)
	wantErr(t, "fifth send on a queue of four", err, verbs.ErrNoResources)
	// The first four were posted: four receives at B release them, in order.
	dst := p.B.Reg(t, 64, rw, 0)
	for i := range 4 {
		p.B.PostRecv(t, uint64(i), dst.SGE(0, 8))
	}
	for i, wc := range p.A.Wait(t, 4) {
		Expect(t, wc, uint64(i), verbs.StatusSuccess, verbs.WCSend)
	}
	p.B.Wait(t, 4)
	// The receive queue of 4 holds 3 more beside the one posted before connect.
	for i := range 3 {
		p.A.PostRecv(t, uint64(10+i), buf.SGE(0, 8))
	}
	wantErr(t, "fifth receive on a queue of four",
		p.A.QP.PostRecv([]verbs.RecvWR{{ID: 14, SG: []verbs.SGE{buf.SGE(0, 8)}}}), verbs.ErrNoResources)

	_, err = p.A.PD.RegMR(make([]byte, 64), verbs.AccessRemoteWrite) // remote write needs local write
	wantErr(t, "remote write without local write", err, verbs.ErrInvalidArgument)
	_, err = p.A.PD.RegMR(make([]byte, 64), verbs.Access(1<<20))
	wantErr(t, "unknown access flag", err, verbs.ErrInvalidArgument)
	_, err = p.A.PD.RegMR(nil, rw)
	wantErr(t, "empty region", err, verbs.ErrInvalidArgument)
	_, err = p.A.Ctx.CreateCQ(0)
	wantErr(t, "empty completion queue", err, verbs.ErrInvalidArgument)
	if attr.MaxCQE > 0 {
		_, err = p.A.Ctx.CreateCQ(attr.MaxCQE + 1)
		wantErr(t, "completion queue above MaxCQE", err, verbs.ErrInvalidArgument)
	}
	_, err = p.A.PD.CreateQP(verbs.QPAttr{SendCQ: p.A.CQ, RecvCQ: p.A.CQ, MaxSendWR: attr.MaxQPWR + 1})
	wantErr(t, "queue pair above MaxQPWR", err, verbs.ErrInvalidArgument)
	_, err = p.A.PD.CreateQP(verbs.QPAttr{})
	wantErr(t, "queue pair without completion queues", err, verbs.ErrInvalidArgument)
	_, err = p.A.PD.CreateQP(verbs.QPAttr{SendCQ: p.B.CQ, RecvCQ: p.B.CQ})
	wantErr(t, "queue pair with another context's completion queue", err, verbs.ErrInvalidArgument)
	wantErr(t, "connect to garbage", mustQP(t, p.A).Connect(verbs.Address("not an address")), verbs.ErrInvalidArgument)
}

func mustQP(t *testing.T, s *Side) verbs.QP {
	q, err := s.PD.CreateQP(verbs.QPAttr{SendCQ: s.CQ, RecvCQ: s.CQ})
	must(t, "create qp", err)
	return q
}

// testLifetimes checks busy and closed objects: a PD with children and a CQ with queue
// pairs refuse to close, everything refuses a second close, and closing a context
// closes what it holds.
func testLifetimes(t *testing.T, env Env) {
	p := NewPair(t, env)
	buf := p.A.Reg(t, 64, rw, 0)
	wantErr(t, "close pd with a region and a queue pair", p.A.PD.Close(), verbs.ErrBusy)
	wantErr(t, "close cq with a queue pair", p.A.CQ.Close(), verbs.ErrBusy)
	must(t, "dereg", buf.MR.Dereg())
	wantErr(t, "second dereg", buf.MR.Dereg(), verbs.ErrClosed)
	wantErr(t, "close pd with a queue pair", p.A.PD.Close(), verbs.ErrBusy)
	must(t, "close qp", p.A.QP.Close())
	must(t, "close pd", p.A.PD.Close())
	wantErr(t, "second pd close", p.A.PD.Close(), verbs.ErrClosed)
	must(t, "close cq", p.A.CQ.Close())
	wantErr(t, "second cq close", p.A.CQ.Close(), verbs.ErrClosed)
	_, err := p.A.CQ.Poll(make([]verbs.WorkCompletion, 1))
	wantErr(t, "poll a closed cq", err, verbs.ErrClosed)

	// Closing a context wakes a waiter on its queue and closes its objects.
	done := make(chan error, 1)
	go func() { done <- p.B.CQ.Wait(t.Context()) }()
	must(t, "close context", p.B.Ctx.Close())
	select {
	case err := <-done:
		if !isErr(err, verbs.ErrClosed) {
			t.Errorf("wait on a queue of a closed context: %v, want ErrClosed", err)
		}
	case <-time.After(env.timeout()):
		t.Fatalf("a waiter on a closed context's queue still blocks after %v", env.timeout())
	}
	_, err = p.B.Ctx.AllocPD()
	wantErr(t, "alloc pd on a closed context", err, verbs.ErrClosed)
	_, err = p.B.PD.RegMR(make([]byte, 8), rw)
	wantErr(t, "register on a closed context", err, verbs.ErrClosed)
	wantErr(t, "second context close", p.B.Ctx.Close(), verbs.ErrClosed)
}
