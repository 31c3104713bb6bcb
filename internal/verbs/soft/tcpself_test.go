package soft

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/goportals/goportals/internal/verbs"
)

// With PTL_SOFT_PATH=tcp, two queue pairs of one context (an NI's connection
// to itself) stay in the process: forcing TCP between ranks must not give a
// rank a TCP stream to itself, whose socket its poll rounds would then read
// for nothing. Two contexts still meet over TCP.
func TestForcedTCPLeavesOwnContextInProcess(t *testing.T) {
	t.Setenv(EnvPath, "tcp")
	c, err := Open()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	pd, err := c.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	cq, err := c.CreateCQ(64)
	if err != nil {
		t.Fatal(err)
	}
	newQP := func() *qp {
		q, err := pd.CreateQP(verbs.QPAttr{SendCQ: cq, RecvCQ: cq, MaxSendWR: 16, MaxRecvWR: 16, MaxSGE: 1})
		if err != nil {
			t.Fatal(err)
		}
		return q.(*qp)
	}
	a, b := newQP(), newQP()
	if err := a.Connect(b.Address()); err != nil {
		t.Fatal(err)
	}
	if err := b.Connect(a.Address()); err != nil {
		t.Fatal(err)
	}
	if a.link != nil || b.link != nil {
		t.Fatalf("queue pairs of one context joined over TCP (links %v, %v)", a.link != nil, b.link != nil)
	}
	if ls := c.links.Load(); ls != nil && len(*ls) != 0 {
		t.Fatalf("the context polls %d TCP links", len(*ls))
	}

	// Another context of this process (its own nonce, the same pid) is
	// still reached over TCP.
	c2, err := Open()
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	pd2, err := c2.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	cq2, err := c2.CreateCQ(64)
	if err != nil {
		t.Fatal(err)
	}
	q2, err := pd2.CreateQP(verbs.QPAttr{SendCQ: cq2, RecvCQ: cq2, MaxSendWR: 16, MaxRecvWR: 16, MaxSGE: 1})
	if err != nil {
		t.Fatal(err)
	}
	d := newQP()
	if err := d.Connect(q2.Address()); err != nil {
		t.Fatal(err)
	}
	if err := q2.Connect(d.Address()); err != nil {
		t.Fatal(err)
	}
	if d.link == nil || q2.(*qp).link == nil {
		t.Fatalf("two contexts of one process not joined over TCP (links %v, %v)", d.link != nil, q2.(*qp).link != nil)
	}

	// The in-process connection carries data.
	src := bytes.Repeat([]byte{0x5a}, 64)
	dst := make([]byte, 64)
	smr, err := pd.RegMR(src, verbs.AccessLocalWrite)
	if err != nil {
		t.Fatal(err)
	}
	dmr, err := pd.RegMR(dst, verbs.AccessLocalWrite|verbs.AccessRemoteWrite)
	if err != nil {
		t.Fatal(err)
	}
	wr := []verbs.SendWR{{ID: 1, Opcode: verbs.OpRDMAWrite, Flags: verbs.SendSignaled,
		SG:         []verbs.SGE{{Addr: smr.Addr(), Length: 64, LKey: smr.LKey()}},
		RemoteAddr: dmr.Addr(), RKey: dmr.RKey()}}
	if err := a.PostSend(wr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	wc := make([]verbs.WorkCompletion, 1)
	for {
		n, err := cq.Poll(wc)
		if err != nil {
			t.Fatal(err)
		}
		if n == 1 {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("no completion")
		}
	}
	if wc[0].Status != verbs.StatusSuccess {
		t.Fatalf("status %v", wc[0].Status)
	}
	if !bytes.Equal(dst, src) {
		t.Fatal("the write did not land")
	}
}
