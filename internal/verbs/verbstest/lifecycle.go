package verbstest

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/goportals/goportals/internal/verbs"
)

// testRNR posts a SEND before the peer posts a receive: it must wait (RNR retry) rather
// than fail or vanish, and be delivered once the receive is posted.
func testRNR(t *testing.T, env Env) {
	p := NewPair(t, env)
	src := p.A.Reg(t, 256, 0, 51)
	dst := p.B.Reg(t, 256, rw, 0)
	p.A.PostSend(t, verbs.SendWR{ID: 1, Opcode: verbs.OpSend, Flags: verbs.SendSignaled, SG: []verbs.SGE{src.SGE(0, 256)}})
	// A WRITE behind the waiting SEND must wait too (RC order).
	wtgt := p.B.Reg(t, 8, rw|verbs.AccessRemoteWrite, 0)
	p.A.PostSend(t, verbs.SendWR{ID: 2, Opcode: verbs.OpRDMAWrite, Flags: verbs.SendSignaled,
		SG: []verbs.SGE{src.SGE(0, 8)}, RemoteAddr: wtgt.Addr(0), RKey: wtgt.MR.RKey()})
	p.A.Quiet(t)
	p.B.Quiet(t)
	sameBytes(t, "write target behind a waiting send", wtgt.Mem, make([]byte, 8))
	p.B.PostRecv(t, 3, dst.SGE(0, 256))
	wcs := p.A.Wait(t, 2)
	Expect(t, wcs[0], 1, verbs.StatusSuccess, verbs.WCSend)
	Expect(t, wcs[1], 2, verbs.StatusSuccess, verbs.WCRDMAWrite)
	Expect(t, p.B.Wait(t, 1)[0], 3, verbs.StatusSuccess, verbs.WCRecv)
	sameBytes(t, "delivered payload", dst.Mem, src.Mem)
	sameBytes(t, "write target", wtgt.Mem, src.Mem[:8])
}

// testUnsignaled checks that unsignaled successes complete nothing while a signaled
// request after them does, and that all of them ran.
func testUnsignaled(t *testing.T, env Env) {
	p := NewPair(t, env)
	src := p.A.Reg(t, 64, 0, 52)
	dst := p.B.Reg(t, 64, rw|verbs.AccessRemoteWrite, 0)
	var wrs []verbs.SendWR
	for i := range 8 {
		wr := verbs.SendWR{ID: uint64(100 + i), Opcode: verbs.OpRDMAWrite,
			SG: []verbs.SGE{src.SGE(8*i, 8)}, RemoteAddr: dst.Addr(8 * i), RKey: dst.MR.RKey()}
		if i == 7 {
			wr.Flags = verbs.SendSignaled
		}
		wrs = append(wrs, wr)
	}
	p.A.PostSend(t, wrs...)
	Expect(t, p.A.Wait(t, 1)[0], 107, verbs.StatusSuccess, verbs.WCRDMAWrite)
	p.A.Quiet(t)
	sameBytes(t, "all eight writes", dst.Mem, src.Mem)
}

// testOrdering interleaves WRITEs, SENDs and READs on one queue pair: each SEND arrives
// in order, after the WRITE posted before it has landed, and each READ sees the WRITE
// posted before it.
func testOrdering(t *testing.T, env Env) {
	const rounds, batch = 256, 16
	p := NewPair(t, env)
	ne := binary.NativeEndian
	vals := p.A.Reg(t, 8*rounds, 0, 0)
	for i := range rounds {
		ne.PutUint64(vals.Mem[8*i:], uint64(i)*0x0101010101010101+1)
	}
	back := p.A.Reg(t, 8*rounds, rw, 0)
	tgt := p.B.Reg(t, 8*rounds, rw|verbs.AccessRemoteWrite|verbs.AccessRemoteRead, 0)
	inbox := p.B.Reg(t, 8*rounds, rw, 0)
	for i := range rounds {
		p.B.PostRecv(t, uint64(i), inbox.SGE(8*i, 8))
	}
	next := 0 // next receive B expects
	for start := 0; start < rounds; start += batch {
		var wrs []verbs.SendWR
		for i := start; i < start+batch; i++ {
			wrs = append(wrs,
				verbs.SendWR{ID: uint64(3 * i), Opcode: verbs.OpRDMAWrite, SG: []verbs.SGE{vals.SGE(8*i, 8)},
					RemoteAddr: tgt.Addr(8 * i), RKey: tgt.MR.RKey()},
				verbs.SendWR{ID: uint64(3*i + 1), Opcode: verbs.OpRDMARead, SG: []verbs.SGE{back.SGE(8*i, 8)},
					RemoteAddr: tgt.Addr(8 * i), RKey: tgt.MR.RKey()},
				verbs.SendWR{ID: uint64(3*i + 2), Opcode: verbs.OpSend, SG: []verbs.SGE{vals.SGE(8*i, 8)}})
		}
		wrs[len(wrs)-1].Flags = verbs.SendSignaled
		p.A.PostSend(t, wrs...)
		Expect(t, p.A.Wait(t, 1)[0], uint64(3*(start+batch-1)+2), verbs.StatusSuccess, verbs.WCSend)
		for _, wc := range p.B.Wait(t, batch) {
			Expect(t, wc, uint64(next), verbs.StatusSuccess, verbs.WCRecv)
			sameBytes(t, "send payload in order", inbox.Mem[8*next:8*next+8], vals.Mem[8*next:8*next+8])
			next++
		}
	}
	sameBytes(t, "written words", tgt.Mem, vals.Mem)
	sameBytes(t, "words read back after each write", back.Mem, vals.Mem)
}

// testFlushOnClose closes queue pairs with work outstanding: every request completes
// with StatusWorkRequestFlushed, signaled or not.
func testFlushOnClose(t *testing.T, env Env) {
	p := NewPair(t, env)
	dst := p.B.Reg(t, 64, rw, 0)
	for i := range 4 {
		p.B.PostRecv(t, uint64(10+i), dst.SGE(16*i, 16))
	}
	// With no receive posted at A, B's SENDs wait; closing B must flush them.
	p.B.PostSend(t,
		verbs.SendWR{ID: 20, Opcode: verbs.OpSend, SG: []verbs.SGE{dst.SGE(0, 8)}},
		verbs.SendWR{ID: 21, Opcode: verbs.OpSend, Flags: verbs.SendSignaled, SG: []verbs.SGE{dst.SGE(0, 8)}})
	must(t, "close qp", p.B.QP.Close())
	got := map[uint64]verbs.Status{}
	for _, wc := range p.B.Wait(t, 6) {
		got[wc.ID] = wc.Status
	}
	for _, id := range []uint64{10, 11, 12, 13, 20, 21} {
		if st, ok := got[id]; !ok || st != verbs.StatusWorkRequestFlushed {
			t.Errorf("request %d: status %v (present %v), want %v", id, st, ok, verbs.StatusWorkRequestFlushed)
		}
	}
	p.B.Quiet(t)
	wantErr(t, "post on a closed queue pair", p.B.QP.PostRecv([]verbs.RecvWR{{ID: 1}}), verbs.ErrClosed)
	wantErr(t, "second close", p.B.QP.Close(), verbs.ErrClosed)
}

// testPeerClosedBusy closes B while A has a SEND waiting for a receive and a receive
// posted: A's SEND completes with StatusRetryExceeded and its receive with an error
// status, instead of hanging.
func testPeerClosedBusy(t *testing.T, env Env) {
	p := NewPair(t, env)
	buf := p.A.Reg(t, 64, rw, 54)
	p.A.PostRecv(t, 1, buf.SGE(0, 32))
	p.A.PostSend(t, verbs.SendWR{ID: 2, Opcode: verbs.OpSend, Flags: verbs.SendSignaled, SG: []verbs.SGE{buf.SGE(32, 32)}})
	must(t, "close peer context", p.B.Ctx.Close())
	got := map[uint64]verbs.Status{}
	for _, wc := range p.A.Wait(t, 2) {
		got[wc.ID] = wc.Status
	}
	if got[2] != verbs.StatusRetryExceeded {
		t.Errorf("waiting send: status %v, want %v", got[2], verbs.StatusRetryExceeded)
	}
	if st, ok := got[1]; !ok || st == verbs.StatusSuccess {
		t.Errorf("posted receive: status %v (present %v), want an error", st, ok)
	}
}

// testPeerClosedThenPost closes B while A is idle; A's next WRITE completes with
// StatusRetryExceeded.
func testPeerClosedIdle(t *testing.T, env Env) {
	p := NewPair(t, env)
	src := p.A.Reg(t, 64, 0, 55)
	tgt := p.B.Reg(t, 64, rw|verbs.AccessRemoteWrite, 0)
	addr, key := tgt.Addr(0), tgt.MR.RKey()
	must(t, "close peer qp", p.B.QP.Close())
	p.A.PostSend(t, verbs.SendWR{ID: 3, Opcode: verbs.OpRDMAWrite, SG: []verbs.SGE{src.SGE(0, 64)},
		RemoteAddr: addr, RKey: key})
	Expect(t, p.A.Wait(t, 1)[0], 3, verbs.StatusRetryExceeded, verbs.WCRDMAWrite)
	sameBytes(t, "target of a write to a closed peer", tgt.Mem, make([]byte, 64))
}

// testPollAllocs checks that Poll allocates nothing, empty or returning completions.
func testPollAllocs(t *testing.T, env Env) {
	const runs = 100
	p := NewPairOpts(t, env, PairOptions{CQEntries: 256, MaxSendWR: 256})
	src := p.A.Reg(t, 8, 0, 56)
	dst := p.B.Reg(t, 8, rw|verbs.AccessRemoteWrite, 0)
	wr := verbs.SendWR{Opcode: verbs.OpRDMAWrite, Flags: verbs.SendSignaled, SG: []verbs.SGE{src.SGE(0, 8)},
		RemoteAddr: dst.Addr(0), RKey: dst.MR.RKey()}
	var wrs []verbs.SendWR
	for i := range runs + 1 {
		wr.ID = uint64(i)
		wrs = append(wrs, wr)
	}
	p.A.PostSend(t, wrs...)
	// Each call polls one completion, spinning while the provider is still working.
	var wc [1]verbs.WorkCompletion
	polled := 0
	deadline := time.Now().Add(env.timeout())
	allocs := testing.AllocsPerRun(runs, func() {
		for spin := 1; ; spin++ {
			n, err := p.A.CQ.Poll(wc[:])
			if err != nil {
				t.Fatal(err)
			}
			if n == 1 {
				polled++
				return
			}
			if spin%(1<<16) == 0 && time.Now().After(deadline) {
				t.Fatalf("no completion after %v (polled %d)", env.timeout(), polled)
			}
		}
	})
	if allocs != 0 {
		t.Errorf("Poll returning completions allocates %.1f times per call", allocs)
	}
	if polled != runs+1 {
		t.Errorf("polled %d completions, want %d", polled, runs+1)
	}
	var empty [8]verbs.WorkCompletion
	var pollErr error
	allocs = testing.AllocsPerRun(runs, func() {
		if _, err := p.B.CQ.Poll(empty[:]); err != nil {
			pollErr = err
		}
	})
	must(t, "poll of an empty queue", pollErr)
	if allocs != 0 {
		t.Errorf("Poll of an empty queue allocates %.1f times per call", allocs)
	}
}
