package soft

import (
	"testing"
	"time"

	"github.com/goportals/goportals/internal/verbs"
	"github.com/goportals/goportals/internal/verbs/verbstest"
)

// zero-length RDMA WRITE with immediate and rkey 0 (IB: a zero-length RDMA op
// does not validate the rkey) is refused with a remote access error.
func TestRegressionZeroLengthWriteImm(t *testing.T) {
	p := verbstest.NewPair(t, softEnv)
	dst := p.B.Reg(t, 8, rwx, 0)
	p.B.PostRecv(t, 5, dst.SGE(0, 8))
	p.A.PostSend(t, verbs.SendWR{ID: 1, Opcode: verbs.OpRDMAWriteWithImm, Flags: verbs.SendSignaled, Imm: 42})
	wcs, err := waitN(t, p.A, 1, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if wcs[0].Status != verbs.StatusSuccess {
		t.Fatalf("zero-length write-with-imm, rkey 0: %v", wcs[0].Status)
	}
}

// RegMR on a deallocated PD and CreateQP on a destroyed CQ succeed.
func TestRegressionDeadParents(t *testing.T) {
	c := openCtx(t)
	pd := allocPD(t, c)
	pd2 := allocPD(t, c)
	if err := pd.Close(); err != nil {
		t.Fatal(err)
	}
	if m, err := pd.RegMR(make([]byte, 64), verbs.AccessLocalWrite); err == nil {
		t.Errorf("RegMR on a closed PD succeeded (key %#x)", m.LKey())
	}
	cq := createCQ(t, c)
	if err := cq.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := pd2.CreateQP(verbs.QPAttr{SendCQ: cq, RecvCQ: cq}); err == nil {
		t.Errorf("CreateQP on a destroyed CQ succeeded")
	}
}

// the ring fd in an address is not verified: after the QP is destroyed and another
// created (its memfd reuses the fd number), Connect to the stale address attaches to
// the new QP's ring.
func TestRegressionStaleAddress(t *testing.T) {
	a, b := openCtx(t), openCtx(t)
	pa, pb := allocPD(t, a), allocPD(t, b)
	cqa, cqb := createCQ(t, a), createCQ(t, b)
	x := createQP(t, pb, cqb)
	stale := x.Address()
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	y := createQP(t, pb, cqb)
	q := createQP(t, pa, cqa)
	if err := q.Connect(stale); err == nil {
		t.Errorf("Connect to a destroyed QP's address succeeded (qpn %d, now QP %d holds that ring)",
			decodeQPN(stale), y.Num())
	}
}

func decodeQPN(b verbs.Address) uint32 {
	a, ok := decodeAddress(b)
	if !ok {
		return 0
	}
	return a.qpn
}

// Setup helpers that fail the test on an error; the context closes when it ends.

func openCtx(t *testing.T) *Context {
	t.Helper()
	c, err := Open()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("close context: %v", err)
		}
	})
	return c
}

func allocPD(t *testing.T, c *Context) verbs.PD {
	t.Helper()
	pd, err := c.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	return pd
}

func createCQ(t *testing.T, c *Context) verbs.CQ {
	t.Helper()
	cq, err := c.CreateCQ(16)
	if err != nil {
		t.Fatal(err)
	}
	return cq
}

func createQP(t *testing.T, pd verbs.PD, cq verbs.CQ) verbs.QP {
	t.Helper()
	qp, err := pd.CreateQP(verbs.QPAttr{SendCQ: cq, RecvCQ: cq})
	if err != nil {
		t.Fatal(err)
	}
	return qp
}

// TestKeysNeverRepeat registers and deregisters one slot many times: no key comes
// back (the generation walks a full cycle before the slot retires).
func TestKeysNeverRepeat(t *testing.T) {
	c := openCtx(t)
	pd := allocPD(t, c)
	buf := make([]byte, 64)
	seen := map[uint32]bool{}
	for i := 0; i < 20000; i++ {
		m, err := pd.RegMR(buf, verbs.AccessLocalWrite)
		if err != nil {
			t.Fatal(err)
		}
		if seen[m.RKey()] {
			t.Fatalf("key %#x handed out twice (after %d registrations)", m.RKey(), i)
		}
		seen[m.RKey()] = true
		m.Dereg()
	}
}
