package soft

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/goportals/goportals/internal/verbs"
)

type side struct {
	ctx *Context
	pd  verbs.PD
	cq  verbs.CQ
	qp  verbs.QP
}

func newSide(t testing.TB) *side {
	c, err := Open()
	if err != nil {
		t.Fatal(err)
	}
	pd, _ := c.AllocPD()
	cq, _ := c.CreateCQ(1024)
	qp, err := pd.CreateQP(verbs.QPAttr{SendCQ: cq, RecvCQ: cq})
	if err != nil {
		t.Fatal(err)
	}
	return &side{c, pd, cq, qp}
}

func pair(t testing.TB) (*side, *side) {
	a, b := newSide(t), newSide(t)
	if err := a.qp.Connect(b.qp.Address()); err != nil {
		t.Fatal(err)
	}
	if err := b.qp.Connect(a.qp.Address()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.ctx.Close(); b.ctx.Close() })
	return a, b
}

func wait1(t testing.TB, cq verbs.CQ) verbs.WorkCompletion {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var wc [1]verbs.WorkCompletion
	for {
		n, err := cq.Poll(wc[:])
		if err != nil {
			t.Fatal(err)
		}
		if n == 1 {
			return wc[0]
		}
		if err := cq.Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

func TestQuick(t *testing.T) {
	a, b := pair(t)
	for _, size := range []int{8, 4096, 1 << 20, 16 << 20} {
		src := make([]byte, size)
		for i := range src {
			src[i] = byte(i*7 + size)
		}
		dst := make([]byte, size)
		smr, err := a.pd.RegMR(src, verbs.AccessLocalWrite|verbs.AccessRemoteRead)
		if err != nil {
			t.Fatal(err)
		}
		dmr, err := b.pd.RegMR(dst, verbs.AccessLocalWrite|verbs.AccessRemoteWrite)
		if err != nil {
			t.Fatal(err)
		}
		b.qp.PostRecv([]verbs.RecvWR{{ID: 7, SG: []verbs.SGE{{Addr: dmr.Addr(), Length: uint32(size), LKey: dmr.LKey()}}}})
		if err := a.qp.PostSend([]verbs.SendWR{{ID: 1, Opcode: verbs.OpSend, Flags: verbs.SendSignaled,
			SG: []verbs.SGE{{Addr: smr.Addr(), Length: uint32(size), LKey: smr.LKey()}}}}); err != nil {
			t.Fatal(err)
		}
		wc := wait1(t, b.cq)
		if wc.Status != verbs.StatusSuccess || wc.ID != 7 || int(wc.ByteLen) != size || !bytes.Equal(src, dst) {
			t.Fatalf("send %d: %+v equal=%v", size, wc, bytes.Equal(src, dst))
		}
		wc = wait1(t, a.cq)
		if wc.Status != verbs.StatusSuccess || wc.ID != 1 {
			t.Fatalf("send completion %+v", wc)
		}
		clear(dst)
		a.qp.PostSend([]verbs.SendWR{{ID: 2, Opcode: verbs.OpRDMAWrite, Flags: verbs.SendSignaled,
			SG: []verbs.SGE{{Addr: smr.Addr(), Length: uint32(size), LKey: smr.LKey()}}, RemoteAddr: dmr.Addr(), RKey: dmr.RKey()}})
		wc = wait1(t, a.cq)
		if wc.Status != verbs.StatusSuccess || !bytes.Equal(src, dst) {
			t.Fatalf("write %d: %+v", size, wc)
		}
		clear(dst)
		b.qp.PostSend([]verbs.SendWR{{ID: 3, Opcode: verbs.OpRDMARead, Flags: verbs.SendSignaled,
			SG: []verbs.SGE{{Addr: dmr.Addr(), Length: uint32(size), LKey: dmr.LKey()}}, RemoteAddr: smr.Addr(), RKey: smr.RKey()}})
		wc = wait1(t, b.cq)
		if wc.Status != verbs.StatusSuccess || !bytes.Equal(src, dst) {
			t.Fatalf("read %d: %+v", size, wc)
		}
		smr.Dereg()
		dmr.Dereg()
	}
}
