package loopback_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/goportals/goportals/internal/verbs"
	"github.com/goportals/goportals/internal/verbs/verbstest"
)

// The randomized test: both sides of a pair post random mixes of WRITE, WRITE with
// immediate, READ, SEND (some inline) and FETCH-ADD toward each other at the same time,
// in random batches, signaling at random. A model checks what must hold on an RC queue
// pair: every signaled request completes once, successfully and in order; receives
// complete in the peer's posting order with the right payloads and immediates; the
// written regions equal the writes applied in order; READs return the peer's bytes; the
// fetch-adds return the running sums.

type rop struct {
	op       verbs.Opcode
	inline   bool
	signaled bool
	off, n   int    // remote offset (WRITE, READ) and length
	srcOff   int    // offset in the source buffer
	pieces   int    // SGEs
	imm      uint32 // immediate
	add      uint64 // fetch-add operand
}

const (
	regSize = 16 << 10
	maxMsg  = 256
)

func genOps(r *rand.Rand, n int) []rop {
	ops := make([]rop, n)
	for i := range ops {
		o := rop{signaled: r.IntN(2) == 0, pieces: 1 + r.IntN(3), imm: r.Uint32()}
		switch k := r.IntN(6); k {
		case 0, 1:
			o.op = verbs.OpRDMAWrite
		case 2:
			o.op = verbs.OpRDMAWriteWithImm
		case 3:
			o.op = verbs.OpRDMARead
		case 4:
			o.op, o.inline = verbs.OpSend, r.IntN(2) == 0
		default:
			o.op, o.add, o.pieces = verbs.OpAtomicFetchAdd, uint64(1+r.IntN(1000)), 1
		}
		if o.op == verbs.OpSend && r.IntN(2) == 0 {
			o.op = verbs.OpSendWithImm
		}
		o.n = 1 + r.IntN(maxMsg)
		if o.inline {
			o.n = 1 + r.IntN(64)
		}
		if o.op == verbs.OpAtomicFetchAdd {
			o.n = 8
		}
		o.off = r.IntN(regSize - o.n)
		o.srcOff = r.IntN(regSize - o.n)
		ops[i] = o
	}
	ops[n-1].signaled = true
	return ops
}

func consumesRecv(op verbs.Opcode) bool {
	return op == verbs.OpSend || op == verbs.OpSendWithImm || op == verbs.OpRDMAWriteWithImm
}

// peerRegions are the regions one side exposes to the other.
type peerRegions struct {
	src, landing, static, readback, inbox, counter, results *verbstest.Buffer
}

func newRegions(t *testing.T, s *verbstest.Side, nops, nin int, seed byte) *peerRegions {
	const lw = verbs.AccessLocalWrite
	return &peerRegions{
		src:      s.Reg(t, regSize, 0, seed),
		landing:  s.Reg(t, regSize, lw|verbs.AccessRemoteWrite, 0),
		static:   s.Reg(t, regSize, verbs.AccessRemoteRead, seed+1),
		readback: s.Reg(t, nops*maxMsg, lw, 0),
		inbox:    s.Reg(t, max(nin, 1)*maxMsg, lw, 0),
		counter:  s.Reg(t, 8, lw|verbs.AccessRemoteAtomic, 0),
		results:  s.Reg(t, nops*8, lw, 0),
	}
}

// drive posts ops from me toward peer and checks everything me observes.
func drive(s *verbstest.Side, me, peer *peerRegions, ops, peerOps []rop, r *rand.Rand, timeout time.Duration) error {
	nin := 0
	for _, o := range peerOps {
		if consumesRecv(o.op) {
			if err := s.QP.PostRecv([]verbs.RecvWR{{ID: uint64(nin), SG: []verbs.SGE{me.inbox.SGE(nin*maxMsg, maxMsg)}}}); err != nil {
				return err
			}
			nin++
		}
	}
	wantSends := 0
	for _, o := range ops {
		if o.signaled {
			wantSends++
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var sendIDs []uint64
	var recvs []verbs.WorkCompletion
	wc := make([]verbs.WorkCompletion, 16)
	poll := func() error {
		n, err := s.CQ.Poll(wc)
		if err != nil {
			return err
		}
		for _, c := range wc[:n] {
			if c.Status != verbs.StatusSuccess {
				return fmt.Errorf("completion %+v: %v", c, c.Status)
			}
			if c.Opcode == verbs.WCRecv || c.Opcode == verbs.WCRecvRDMAWithImm {
				recvs = append(recvs, c)
			} else {
				sendIDs = append(sendIDs, c.ID)
			}
		}
		return nil
	}
	for i := 0; i < len(ops); {
		batch := min(1+r.IntN(8), len(ops)-i)
		wrs := make([]verbs.SendWR, 0, batch)
		for j := i; j < i+batch; j++ {
			wrs = append(wrs, buildWR(uint64(j), ops[j], me, peer))
		}
		if err := s.QP.PostSend(wrs); err != nil {
			return err
		}
		i += batch
		if err := poll(); err != nil {
			return err
		}
	}
	for len(sendIDs) < wantSends || len(recvs) < nin {
		if err := poll(); err != nil {
			return err
		}
		if len(sendIDs) < wantSends || len(recvs) < nin {
			if err := s.CQ.Wait(ctx); err != nil {
				return fmt.Errorf("have %d/%d send and %d/%d receive completions: %w", len(sendIDs), wantSends, len(recvs), nin, err)
			}
		}
	}
	// Signaled sends complete in order, once each.
	k := 0
	for j, o := range ops {
		if !o.signaled {
			continue
		}
		if sendIDs[k] != uint64(j) {
			return fmt.Errorf("send completion %d has id %d, want %d", k, sendIDs[k], j)
		}
		k++
	}
	// Receives complete in the peer's order with its payloads and immediates.
	k = 0
	for _, o := range peerOps {
		if !consumesRecv(o.op) {
			continue
		}
		c := recvs[k]
		if c.ID != uint64(k) || c.ByteLen != uint32(o.n) {
			return fmt.Errorf("receive %d: %+v, want id %d, %d bytes", k, c, k, o.n)
		}
		if o.op != verbs.OpSend && (c.Flags&verbs.WCWithImm == 0 || c.Imm != o.imm) {
			return fmt.Errorf("receive %d: %+v, want immediate %#x", k, c, o.imm)
		}
		if o.op != verbs.OpRDMAWriteWithImm && !bytes.Equal(me.inbox.Mem[k*maxMsg:k*maxMsg+o.n], peer.src.Mem[o.srcOff:o.srcOff+o.n]) {
			return fmt.Errorf("receive %d: payload differs", k)
		}
		k++
	}
	return nil
}

func buildWR(id uint64, o rop, me, peer *peerRegions) verbs.SendWR {
	wr := verbs.SendWR{ID: id, Opcode: o.op, Imm: o.imm}
	if o.signaled {
		wr.Flags |= verbs.SendSignaled
	}
	var buf *verbstest.Buffer
	off := o.srcOff
	switch o.op {
	case verbs.OpRDMAWrite, verbs.OpRDMAWriteWithImm:
		buf, wr.RemoteAddr, wr.RKey = me.src, peer.landing.Addr(o.off), peer.landing.MR.RKey()
	case verbs.OpRDMARead:
		buf, off, wr.RemoteAddr, wr.RKey = me.readback, int(id)*maxMsg, peer.static.Addr(o.off), peer.static.MR.RKey()
	case verbs.OpAtomicFetchAdd:
		buf, off, wr.RemoteAddr, wr.RKey, wr.CompareAdd = me.results, int(id)*8, peer.counter.Addr(0), peer.counter.MR.RKey(), o.add
	default:
		buf = me.src
	}
	if o.inline {
		wr.Flags |= verbs.SendInline
		wr.SG = []verbs.SGE{{Addr: uint64(uintptr(unsafe.Pointer(&buf.Mem[off]))), Length: uint32(o.n)}}
		return wr
	}
	rest := o.n
	for p := o.pieces; p > 0 && rest > 0; p-- {
		n := rest
		if p > 1 {
			n = max(1, rest/p)
		}
		wr.SG = append(wr.SG, buf.SGE(off, n))
		off += n
		rest -= n
	}
	return wr
}

// checkEffects checks what side "from" did to side "to" once both are done.
func checkEffects(from, to *peerRegions, ops []rop) error {
	model := make([]byte, regSize)
	var sum uint64
	for j, o := range ops {
		switch o.op {
		case verbs.OpRDMAWrite, verbs.OpRDMAWriteWithImm:
			copy(model[o.off:o.off+o.n], from.src.Mem[o.srcOff:])
		case verbs.OpRDMARead:
			if !bytes.Equal(from.readback.Mem[j*maxMsg:j*maxMsg+o.n], to.static.Mem[o.off:o.off+o.n]) {
				return fmt.Errorf("read %d returned other bytes", j)
			}
		case verbs.OpAtomicFetchAdd:
			if old := binary.NativeEndian.Uint64(from.results.Mem[j*8:]); old != sum {
				return fmt.Errorf("fetch-add %d returned %d, want %d", j, old, sum)
			}
			sum += o.add
		}
	}
	if !bytes.Equal(to.landing.Mem, model) {
		return fmt.Errorf("written region differs from the writes applied in order")
	}
	if got := binary.NativeEndian.Uint64(to.counter.Mem); got != sum {
		return fmt.Errorf("counter %d, want %d", got, sum)
	}
	return nil
}

func runInterleaved(t *testing.T, seed uint64, n int) {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	opsA, opsB := genOps(r, n), genOps(r, n)
	count := func(ops []rop) (k int) {
		for _, o := range ops {
			if consumesRecv(o.op) {
				k++
			}
		}
		return k
	}
	p := verbstest.NewPairOpts(t, env, verbstest.PairOptions{MaxSendWR: 2 * n, MaxRecvWR: 2 * n, CQEntries: 4 * n})
	ra := newRegions(t, p.A, n, count(opsB), 1)
	rb := newRegions(t, p.B, n, count(opsA), 2)
	var wg sync.WaitGroup
	var errA, errB error
	ra2, rb2 := rand.New(rand.NewPCG(seed, 1)), rand.New(rand.NewPCG(seed, 2))
	wg.Add(2)
	go func() { defer wg.Done(); errA = drive(p.A, ra, rb, opsA, opsB, ra2, 30*time.Second) }()
	go func() { defer wg.Done(); errB = drive(p.B, rb, ra, opsB, opsA, rb2, 30*time.Second) }()
	wg.Wait()
	for _, err := range []error{errA, errB, checkEffects(ra, rb, opsA), checkEffects(rb, ra, opsB)} {
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
	}
}

func TestInterleavedRandom(t *testing.T) {
	for seed := range uint64(8) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { runInterleaved(t, seed, 200) })
	}
}

func FuzzInterleaved(f *testing.F) {
	for _, s := range []uint64{1, 42, 1 << 40} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, seed uint64) { runInterleaved(t, seed, 64) })
}
