package loopback_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/goportals/goportals/internal/verbs"
	"github.com/goportals/goportals/internal/verbs/verbstest"
)

// TestCQOverrun overruns a 4-entry queue: the completions that fit are polled, then
// Poll and Wait report ErrNoResources and the queue pair is in the error state.
func TestCQOverrun(t *testing.T) {
	p := verbstest.NewPairOpts(t, env, verbstest.PairOptions{CQEntries: 4, MaxSendWR: 16})
	src := p.A.Reg(t, 8, 0, 1)
	dst := p.B.Reg(t, 8, verbs.AccessLocalWrite|verbs.AccessRemoteWrite, 0)
	var wrs []verbs.SendWR
	for i := range 6 {
		wrs = append(wrs, verbs.SendWR{ID: uint64(i), Opcode: verbs.OpRDMAWrite, Flags: verbs.SendSignaled,
			SG: []verbs.SGE{src.SGE(0, 8)}, RemoteAddr: dst.Addr(0), RKey: dst.MR.RKey()})
	}
	p.A.PostSend(t, wrs...)
	wc := make([]verbs.WorkCompletion, 8)
	n, err := p.A.CQ.Poll(wc)
	if n != 4 || err != nil {
		t.Fatalf("poll: %d, %v; want the 4 completions that fit", n, err)
	}
	if _, err := p.A.CQ.Poll(wc); !errors.Is(err, verbs.ErrNoResources) {
		t.Fatalf("poll after overrun: %v, want ErrNoResources", err)
	}
	if err := p.A.CQ.Wait(context.Background()); !errors.Is(err, verbs.ErrNoResources) {
		t.Fatalf("wait after overrun: %v, want ErrNoResources", err)
	}
	if st := p.A.QP.State(); st != verbs.QPError {
		t.Fatalf("queue pair state %v after overrun, want error", st)
	}
}

// TestWaitContext checks that Wait returns the context's error when nothing arrives and
// wakes every waiter when a completion does.
func TestWaitContext(t *testing.T) {
	p := verbstest.NewPair(t, env)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if err := p.A.CQ.Wait(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("wait: %v, want DeadlineExceeded", err)
	}
	const waiters = 3
	done := make(chan error, waiters)
	for range waiters {
		go func() { done <- p.B.CQ.Wait(t.Context()) }()
	}
	buf := p.B.Reg(t, 8, verbs.AccessLocalWrite, 0)
	p.B.PostRecv(t, 1, buf.SGE(0, 8))
	p.A.PostSend(t, verbs.SendWR{Opcode: verbs.OpSendWithImm, Imm: 5})
	for range waiters {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a waiter was not woken by a ready completion")
		}
	}
}

// TestConnectErrors checks the addresses Connect refuses.
func TestConnectErrors(t *testing.T) {
	p := verbstest.NewPairOpts(t, env, verbstest.PairOptions{NoConnect: true})
	third := verbstest.NewPairOpts(t, env, verbstest.PairOptions{NoConnect: true})
	addrB := p.B.QP.Address()
	if err := p.A.QP.Connect(addrB); err != nil {
		t.Fatal(err)
	}
	// B is claimed by A: a third queue pair cannot connect to it, nor B elsewhere.
	if err := third.A.QP.Connect(addrB); !errors.Is(err, verbs.ErrUnreachable) {
		t.Fatalf("connect to a claimed queue pair: %v, want ErrUnreachable", err)
	}
	if err := p.B.QP.Connect(third.A.QP.Address()); !errors.Is(err, verbs.ErrInvalidArgument) {
		t.Fatalf("connect a claimed queue pair elsewhere: %v, want ErrInvalidArgument", err)
	}
	// A closed queue pair's address is unreachable.
	gone := third.B.QP.Address()
	if err := third.B.QP.Close(); err != nil {
		t.Fatal(err)
	}
	if err := third.A.QP.Connect(gone); !errors.Is(err, verbs.ErrUnreachable) {
		t.Fatalf("connect to a closed queue pair: %v, want ErrUnreachable", err)
	}
	// Once A closes before B connected back, B is free to connect elsewhere.
	if err := p.A.QP.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.B.QP.Connect(third.A.QP.Address()); err != nil {
		t.Fatalf("connect after the claimant closed: %v", err)
	}
}

// TestSelfConnected connects a queue pair to itself: it receives its own messages.
func TestSelfConnected(t *testing.T) {
	p := verbstest.NewPairOpts(t, env, verbstest.PairOptions{NoConnect: true})
	if err := p.A.QP.Connect(p.A.QP.Address()); err != nil {
		t.Fatal(err)
	}
	buf := p.A.Reg(t, 16, verbs.AccessLocalWrite, 7)
	p.A.PostRecv(t, 1, buf.SGE(8, 8))
	p.A.PostSend(t, verbs.SendWR{ID: 2, Opcode: verbs.OpSend, Flags: verbs.SendSignaled, SG: []verbs.SGE{buf.SGE(0, 8)}})
	wcs := p.A.Wait(t, 2)
	if wcs[0].ID+wcs[1].ID != 3 || wcs[0].Status != verbs.StatusSuccess || wcs[1].Status != verbs.StatusSuccess {
		t.Fatalf("completions %+v", wcs)
	}
	if string(buf.Mem[:8]) != string(buf.Mem[8:]) {
		t.Fatalf("self-delivered payload % x, want % x", buf.Mem[8:], buf.Mem[:8])
	}
	if buf.MR.Len() != 16 {
		t.Fatalf("Len %d, want 16", buf.MR.Len())
	}
}
