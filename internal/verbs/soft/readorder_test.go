package soft

import (
	"testing"
	"time"

	"github.com/goportals/goportals/internal/verbs"
	"github.com/goportals/goportals/internal/verbs/verbstest"
)

// A READ posted behind a SEND the peer has not consumed (no receive posted there)
// runs at once: it waits only for our earlier WRITEs and atomics, not for the peer
// to poll. Its completion still follows the SEND's.
func TestReadNotHeldBehindUnconsumedSend(t *testing.T) {
	p := verbstest.NewPair(t, softEnv)
	src := p.A.Reg(t, 64, rwx, 5)
	back := p.A.Reg(t, 64, rwx, 0)
	tgt := p.B.Reg(t, 64, rwx, 9)
	p.A.PostSend(t, verbs.SendWR{ID: 1, Opcode: verbs.OpSend, Flags: verbs.SendSignaled, SG: []verbs.SGE{src.SGE(0, 8)}})
	p.A.PostSend(t, verbs.SendWR{ID: 2, Opcode: verbs.OpRDMARead, Flags: verbs.SendSignaled,
		SG: []verbs.SGE{back.SGE(0, 64)}, RemoteAddr: tgt.Addr(0), RKey: tgt.MR.RKey()})
	a := p.A.QP.(*qp)
	waitFor(t, "the READ behind an unconsumed SEND to run", 10*time.Second, func() bool {
		p.A.Ctx.(*Context).round()
		n, state, _, _ := a.outstanding()
		a.mu.Lock()
		readDone := a.sq[1].state == esDone
		a.mu.Unlock()
		return n == 2 && state == esAwaitTail && readDone
	})
	for i := range back.Mem {
		if back.Mem[i] != tgt.Mem[i] {
			t.Fatalf("byte %d read %#x, want %#x", i, back.Mem[i], tgt.Mem[i])
		}
	}
	var wc [2]verbs.WorkCompletion
	if n, _ := p.A.CQ.Poll(wc[:]); n != 0 {
		t.Fatalf("a completion %+v before the SEND was received: completions must stay in order", wc[0])
	}
	inbox := p.B.Reg(t, 8, rwx, 0)
	p.B.PostRecv(t, 7, inbox.SGE(0, 8))
	wcs := p.A.Wait(t, 2)
	verbstest.Expect(t, wcs[0], 1, verbs.StatusSuccess, verbs.WCSend)
	verbstest.Expect(t, wcs[1], 2, verbs.StatusSuccess, verbs.WCRDMARead)
}

// A READ behind a WRITE through the ring waits until the peer applied the WRITE:
// it reads the written bytes.
func TestReadWaitsForEarlierWrite(t *testing.T) {
	p := verbstest.NewPair(t, softEnv)
	src := p.A.Reg(t, 8, rwx, 3)
	back := p.A.Reg(t, 8, rwx, 0)
	tgt := p.B.Reg(t, 8, rwx, 0)
	// B's progress cannot apply the WRITE while we hold its progress lock.
	bctx := p.B.Ctx.(*Context)
	bctx.progMu.Lock()
	p.A.PostSend(t, verbs.SendWR{ID: 1, Opcode: verbs.OpRDMAWrite, SG: []verbs.SGE{src.SGE(0, 8)},
		RemoteAddr: tgt.Addr(0), RKey: tgt.MR.RKey()},
		verbs.SendWR{ID: 2, Opcode: verbs.OpRDMARead, Flags: verbs.SendSignaled, SG: []verbs.SGE{back.SGE(0, 8)},
			RemoteAddr: tgt.Addr(0), RKey: tgt.MR.RKey()})
	a := p.A.QP.(*qp)
	for i := 0; i < 100; i++ {
		p.A.Ctx.(*Context).round()
	}
	a.mu.Lock()
	early := a.sq[1].state == esDone
	a.mu.Unlock()
	bctx.progMu.Unlock()
	if early {
		t.Fatal("the READ ran before the peer applied the earlier WRITE")
	}
	verbstest.Expect(t, p.A.Wait(t, 1)[0], 2, verbs.StatusSuccess, verbs.WCRDMARead)
	for i := range back.Mem {
		if back.Mem[i] != src.Mem[i] {
			t.Fatalf("byte %d read %#x, want the written %#x", i, back.Mem[i], src.Mem[i])
		}
	}
}

// A WRITE large enough for cross-memory attach, posted behind a SEND the peer has
// not consumed (no receive posted there), runs at once, as a READ does: the peer
// must not have to poll before a pushed transfer moves. Its completion still
// follows the SEND's.
func TestCMAWriteNotHeldBehindUnconsumedSend(t *testing.T) {
	p := verbstest.NewPair(t, softEnv)
	n := cmaThreshold + 4096
	src := p.A.Reg(t, 8, rwx, 5)
	data := p.A.Reg(t, n, rwx, 7)
	tgt := p.B.Reg(t, n, rwx, 0)
	p.A.PostSend(t, verbs.SendWR{ID: 1, Opcode: verbs.OpSend, Flags: verbs.SendSignaled, SG: []verbs.SGE{src.SGE(0, 8)}})
	p.A.PostSend(t, verbs.SendWR{ID: 2, Opcode: verbs.OpRDMAWrite, Flags: verbs.SendSignaled,
		SG: []verbs.SGE{data.SGE(0, n)}, RemoteAddr: tgt.Addr(0), RKey: tgt.MR.RKey()})
	a := p.A.QP.(*qp)
	waitFor(t, "the WRITE behind an unconsumed SEND to run", 10*time.Second, func() bool {
		p.A.Ctx.(*Context).round()
		a.mu.Lock()
		defer a.mu.Unlock()
		return a.sq[1].state == esDone
	})
	for i := range tgt.Mem {
		if tgt.Mem[i] != data.Mem[i] {
			t.Fatalf("byte %d holds %#x, want the written %#x", i, tgt.Mem[i], data.Mem[i])
		}
	}
	var wc [2]verbs.WorkCompletion
	if n, _ := p.A.CQ.Poll(wc[:]); n != 0 {
		t.Fatalf("a completion %+v before the SEND was received: completions must stay in order", wc[0])
	}
	inbox := p.B.Reg(t, 8, rwx, 0)
	p.B.PostRecv(t, 7, inbox.SGE(0, 8))
	wcs := p.A.Wait(t, 2)
	verbstest.Expect(t, wcs[0], 1, verbs.StatusSuccess, verbs.WCSend)
	verbstest.Expect(t, wcs[1], 2, verbs.StatusSuccess, verbs.WCRDMAWrite)
}

// A cross-memory WRITE behind a WRITE through the ring waits until the peer
// applied it (write-after-write order): the later data wins.
func TestCMAWriteWaitsForEarlierWrite(t *testing.T) {
	p := verbstest.NewPair(t, softEnv)
	n := cmaThreshold + 4096
	small := p.A.Reg(t, 8, rwx, 3)
	big := p.A.Reg(t, n, rwx, 9)
	tgt := p.B.Reg(t, n, rwx, 0)
	bctx := p.B.Ctx.(*Context)
	bctx.progMu.Lock()
	p.A.PostSend(t, verbs.SendWR{ID: 1, Opcode: verbs.OpRDMAWrite, SG: []verbs.SGE{small.SGE(0, 8)},
		RemoteAddr: tgt.Addr(0), RKey: tgt.MR.RKey()},
		verbs.SendWR{ID: 2, Opcode: verbs.OpRDMAWrite, Flags: verbs.SendSignaled, SG: []verbs.SGE{big.SGE(0, n)},
			RemoteAddr: tgt.Addr(0), RKey: tgt.MR.RKey()})
	a := p.A.QP.(*qp)
	for i := 0; i < 100; i++ {
		p.A.Ctx.(*Context).round()
	}
	a.mu.Lock()
	early := a.sq[1].state == esDone
	a.mu.Unlock()
	bctx.progMu.Unlock()
	if early {
		t.Fatal("the cross-memory WRITE ran before the peer applied the earlier WRITE")
	}
	verbstest.Expect(t, p.A.Wait(t, 1)[0], 2, verbs.StatusSuccess, verbs.WCRDMAWrite)
	for i := range tgt.Mem {
		if tgt.Mem[i] != big.Mem[i] {
			t.Fatalf("byte %d holds %#x, want the later WRITE's %#x", i, tgt.Mem[i], big.Mem[i])
		}
	}
}
