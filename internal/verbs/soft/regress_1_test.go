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
	p.A.PostSend(t, verbs.SendWR{ID: 1, Opcode: verbs.OpRDMAWrite, Flags: verbs.SendSignaled,
		SG: []verbs.SGE{src.SGE(0, 8)}, RemoteAddr: tgt.Addr(0), RKey: tgt.MR.RKey() ^ 0x5a5a000})
	// Let B refuse it (B's progress goroutine or a Poll on B).
	for i := 0; p.B.QP.State() != verbs.QPError; i++ {
		var wc [1]verbs.WorkCompletion
		p.B.CQ.Poll(wc[:])
		if i > 1e7 {
			t.Fatal("B never refused")
		}
	}
	_ = p.A.QP.PostSend([]verbs.SendWR{{ID: 2, Opcode: verbs.OpRDMAWrite, Flags: verbs.SendSignaled,
		SG: []verbs.SGE{src.SGE(0, 8)}, RemoteAddr: tgt.Addr(0), RKey: tgt.MR.RKey()}})
	wcs, err := waitN(t, p.A, 2, 2*time.Second)
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
	time.Sleep(10 * time.Millisecond)
	if err := p.B.QP.Close(); err != nil {
		t.Fatal(err)
	}
	wcs, err := waitN(t, p.A, 1, 3*time.Second)
	if err != nil {
		t.Fatalf("A's SEND never completed after B closed its queue pair: %v %v", err, wcs)
	}
	if wcs[0].ID != 2 || wcs[0].Status != verbs.StatusRetryExceeded {
		t.Fatalf("A's SEND completed %+v, want retry exceeded", wcs[0])
	}
}
