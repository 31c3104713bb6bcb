package soft

import (
	"context"
	"testing"
	"time"

	"github.com/goportals/goportals/internal/verbs"
	"github.com/goportals/goportals/internal/verbs/verbstest"
)

const rwx = verbs.AccessLocalWrite | verbs.AccessRemoteWrite | verbs.AccessRemoteRead

func waitN(t *testing.T, s *verbstest.Side, n int, d time.Duration) ([]verbs.WorkCompletion, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var out []verbs.WorkCompletion
	buf := make([]verbs.WorkCompletion, n)
	for len(out) < n {
		k, err := s.CQ.Poll(buf[:n-len(out)])
		if err != nil {
			return out, err
		}
		out = append(out, buf[:k]...)
		if len(out) == n {
			break
		}
		if err := s.CQ.Wait(ctx); err != nil {
			return out, err
		}
	}
	return out, nil
}

// Our RDMA READ's response sits behind a SEND from the peer that we have no
// receive for: the READ never completes (on RC hardware responses are independent of
// the peer's requests, so the READ completes).
func TestRegressionReadBehindRNR(t *testing.T) {
	p := verbstest.NewPair(t, softEnv)
	bsrc := p.B.Reg(t, 64, rwx, 3)
	bdst := p.B.Reg(t, 64, rwx, 0)
	asrc := p.A.Reg(t, 64, rwx, 0)
	// B sends to A; A has no receive posted.
	p.B.PostSend(t, verbs.SendWR{ID: 1, Opcode: verbs.OpSend, SG: []verbs.SGE{bsrc.SGE(0, 8)}})
	// A reads from B.
	p.A.PostSend(t, verbs.SendWR{ID: 2, Opcode: verbs.OpRDMARead, Flags: verbs.SendSignaled,
		SG: []verbs.SGE{asrc.SGE(0, 64)}, RemoteAddr: bdst.Addr(0), RKey: bdst.MR.RKey()})
	wcs, err := waitN(t, p.A, 1, 2*time.Second)
	if err != nil {
		t.Fatalf("READ did not complete while a SEND to A waits for a receive: %v (%v)", err, wcs)
	}
}

// A WRITE is NAKed (bad rkey); before A's progress reaps the NAK, A posts another
// request. issue() sees the peer's closed word first, fails the new request with
// RetryExceeded and flushes the NAKed one: the remote access error is lost.
func TestRegressionNakStatusLost(t *testing.T) {
	p := verbstest.NewPair(t, softEnv)
	src := p.A.Reg(t, 64, rwx, 1)
	tgt := p.B.Reg(t, 64, rwx, 0)
	// No progress round of A's may reap the NAK before the second post: hold A's
	// progress lock (its goroutine and polls skip their rounds meanwhile).
	actx := p.A.Ctx.(*Context)
	actx.progMu.Lock()
	locked := true
	defer func() {
		if locked {
			actx.progMu.Unlock()
		}
	}()
	p.A.PostSend(t, verbs.SendWR{ID: 1, Opcode: verbs.OpRDMAWrite, Flags: verbs.SendSignaled,
		SG: []verbs.SGE{src.SGE(0, 8)}, RemoteAddr: tgt.Addr(0), RKey: tgt.MR.RKey() ^ 0x5a5a000})
	// Let B refuse it (B's progress goroutine or a Poll on B).
	waitFor(t, "B refusing the WRITE", 10*time.Second, func() bool {
		var wc [1]verbs.WorkCompletion
		if _, err := p.B.CQ.Poll(wc[:]); err != nil {
			t.Fatal(err)
		}
		return p.B.QP.State() == verbs.QPError
	})
	if st := p.A.QP.State(); st != verbs.QPReady {
		t.Fatalf("A is %v before the second post: the NAK was reaped, the scenario did not happen", st)
	}
	if err := p.A.QP.PostSend([]verbs.SendWR{{ID: 2, Opcode: verbs.OpRDMAWrite, Flags: verbs.SendSignaled,
		SG: []verbs.SGE{src.SGE(0, 8)}, RemoteAddr: tgt.Addr(0), RKey: tgt.MR.RKey()}}); err != nil {
		t.Fatal(err)
	}
	actx.progMu.Unlock()
	locked = false
	wcs, err := waitN(t, p.A, 2, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if wcs[0].ID != 1 || wcs[0].Status != verbs.StatusRemoteAccessError {
		t.Fatalf("first completion %+v (%v), want id 1 %v; second %+v (%v)", wcs[0], wcs[0].Status,
			verbs.StatusRemoteAccessError, wcs[1], wcs[1].Status)
	}
}

// B sends to A (A has no receive), A has a signaled SEND outstanding to B (B has no
// receive either), then B closes its queue pair. A's inbound ring still holds B's
// unconsumable SEND, so progress never notices the peer closed: A's SEND hangs.
func TestRegressionPeerClosedWithStuckInbound(t *testing.T) {
	p := verbstest.NewPair(t, softEnv)
	bsrc := p.B.Reg(t, 64, rwx, 3)
	asrc := p.A.Reg(t, 64, rwx, 4)
	p.B.PostSend(t, verbs.SendWR{ID: 1, Opcode: verbs.OpSend, SG: []verbs.SGE{bsrc.SGE(0, 8)}})
	p.A.PostSend(t, verbs.SendWR{ID: 2, Opcode: verbs.OpSend, Flags: verbs.SendSignaled, SG: []verbs.SGE{asrc.SGE(0, 8)}})
	// Both SENDs are in the rings (PostSend pushed them). One progress round on each
	// side after that has looked at the peer's SEND and left it for want of a receive.
	p.A.Ctx.(*Context).round()
	p.B.Ctx.(*Context).round()
	a, b := p.A.QP.(*qp), p.B.QP.(*qp)
	if !a.inboundWaiting() || !b.inboundWaiting() {
		t.Fatalf("a SEND was consumed without a receive (A's inbound waiting %v, B's %v)",
			a.inboundWaiting(), b.inboundWaiting())
	}
	if n, _, _, _ := a.outstanding(); n != 1 || p.A.QP.State() != verbs.QPReady {
		t.Fatalf("before B closes: A has %d sends outstanding, state %v; want 1, ready", n, p.A.QP.State())
	}
	if err := p.B.QP.Close(); err != nil {
		t.Fatal(err)
	}
	wcs, err := waitN(t, p.A, 1, 10*time.Second)
	if err != nil {
		t.Fatalf("A's SEND never completed after B closed its queue pair: %v %v", err, wcs)
	}
	if wcs[0].ID != 2 || wcs[0].Status != verbs.StatusRetryExceeded {
		t.Fatalf("A's SEND completed %+v, want retry exceeded", wcs[0])
	}
}
