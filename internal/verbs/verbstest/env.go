package verbstest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/goportals/goportals/internal/verbs"
)

// DefaultTimeout bounds each blocking wait of the suite when Env.Timeout is 0. It is
// generous: it exists so that a provider bug fails a test instead of hanging it.
const DefaultTimeout = 30 * time.Second

// Env describes the provider under test.
type Env struct {
	// Name labels the provider in failure messages.
	Name string
	// Open returns two fresh contexts whose queue pairs can connect to each other. The
	// suite closes both; a second Close may fail with verbs.ErrClosed.
	Open func(tb testing.TB) (a, b verbs.Context)
	// Timeout bounds each blocking wait; 0 means DefaultTimeout.
	Timeout time.Duration
}

func (e Env) timeout() time.Duration {
	if e.Timeout > 0 {
		return e.Timeout
	}
	return DefaultTimeout
}

// Side is one end of a connected pair: a context with one protection domain, one
// completion queue used for both sends and receives, and one queue pair.
type Side struct {
	Ctx verbs.Context
	PD  verbs.PD
	CQ  verbs.CQ
	QP  verbs.QP
	env Env
}

// Pair is two sides whose queue pairs are connected to each other.
type Pair struct {
	A, B *Side
}

// PairOptions tune NewPairOpts; zero fields take the defaults of NewPair.
type PairOptions struct {
	// CQEntries is the size of each completion queue (default min(MaxCQE, 4096)).
	CQEntries int
	// MaxSendWR and MaxRecvWR are the queue depths (default min(MaxQPWR, 512)).
	MaxSendWR, MaxRecvWR int
	// NoConnect leaves both queue pairs in the init state.
	NoConnect bool
}

// NewPair opens env's two contexts and connects a queue pair on each to the other. The
// contexts are closed when the test ends.
func NewPair(tb testing.TB, env Env) *Pair { return NewPairOpts(tb, env, PairOptions{}) }

// NewPairOpts is NewPair with options.
func NewPairOpts(tb testing.TB, env Env, o PairOptions) *Pair {
	tb.Helper()
	ca, cb := env.Open(tb)
	tb.Cleanup(func() {
		// A test may have closed one already: only that second Close may fail.
		for _, c := range []verbs.Context{ca, cb} {
			if err := c.Close(); err != nil && !isErr(err, verbs.ErrClosed) {
				tb.Errorf("%s: close context: %v", env.Name, err)
			}
		}
	})
	p := &Pair{A: newSide(tb, env, ca, o), B: newSide(tb, env, cb, o)}
	if !o.NoConnect {
		must(tb, "connect A", p.A.QP.Connect(p.B.QP.Address()))
		must(tb, "connect B", p.B.QP.Connect(p.A.QP.Address()))
	}
	return p
}

func newSide(tb testing.TB, env Env, c verbs.Context, o PairOptions) *Side {
	tb.Helper()
	attr := c.Attr()
	entries := o.CQEntries
	if entries == 0 {
		entries = min(attr.MaxCQE, 4096)
	}
	depth := func(v int) int {
		if v == 0 {
			return min(attr.MaxQPWR, 512)
		}
		return v
	}
	s := &Side{Ctx: c, env: env}
	var err error
	s.PD, err = c.AllocPD()
	must(tb, "alloc pd", err)
	s.CQ, err = c.CreateCQ(entries)
	must(tb, "create cq", err)
	s.QP, err = s.PD.CreateQP(verbs.QPAttr{SendCQ: s.CQ, RecvCQ: s.CQ,
		MaxSendWR: depth(o.MaxSendWR), MaxRecvWR: depth(o.MaxRecvWR), MaxSGE: min(attr.MaxSGE, 4)})
	must(tb, "create qp", err)
	return s
}

func must(tb testing.TB, what string, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatalf("%s: %v", what, err)
	}
}

// skipIfUnsupported skips the test when err says the provider or the machine lacks the
// feature (verbs.ErrNotSupported) or the memory-lock limit refused a registration.
func skipIfUnsupported(tb testing.TB, what string, err error) {
	tb.Helper()
	switch {
	case errors.Is(err, verbs.ErrMemlock):
		tb.Skipf("%s: registration refused by RLIMIT_MEMLOCK (raise it with ulimit -l or run as root): %v", what, err)
	case errors.Is(err, verbs.ErrNotSupported):
		tb.Skipf("%s: not supported by the provider: %v", what, err)
	}
}

// Buffer is a registered buffer.
type Buffer struct {
	Mem []byte
	MR  verbs.MR
}

// SGE returns the SGE of n bytes at offset off of the buffer.
func (b *Buffer) SGE(off, n int) verbs.SGE {
	return verbs.SGE{Addr: b.MR.Addr() + uint64(off), Length: uint32(n), LKey: b.MR.LKey()}
}

// Addr returns the virtual address of byte off, for RemoteAddr.
func (b *Buffer) Addr(off int) uint64 { return b.MR.Addr() + uint64(off) }

// Reg registers a fresh buffer of size bytes on s filled with fill (a pattern seed; 0
// leaves zeros). It skips the test when the registration is refused for lack of
// lockable memory or support.
func (s *Side) Reg(tb testing.TB, size int, access verbs.Access, fill byte) *Buffer {
	tb.Helper()
	mem := make([]byte, size)
	if fill != 0 {
		pattern(mem, fill)
	}
	mr, err := s.PD.RegMR(mem, access)
	skipIfUnsupported(tb, fmt.Sprintf("register %d bytes", size), err)
	must(tb, "reg mr", err)
	return &Buffer{Mem: mem, MR: mr}
}

// pattern fills b with a sequence that differs per seed and per position, so misplaced
// or shifted bytes are caught.
func pattern(b []byte, seed byte) {
	x := uint32(seed)*2654435761 + 1
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = byte(x)
	}
}

// PostSend posts wrs on s and fails the test on a synchronous error.
func (s *Side) PostSend(tb testing.TB, wrs ...verbs.SendWR) {
	tb.Helper()
	must(tb, "post send", s.QP.PostSend(wrs))
}

// PostRecv posts one receive of the given SGEs on s.
func (s *Side) PostRecv(tb testing.TB, id uint64, sg ...verbs.SGE) {
	tb.Helper()
	must(tb, "post recv", s.QP.PostRecv([]verbs.RecvWR{{ID: id, SG: sg}}))
}

// Wait returns exactly n completions from s's queue, failing the test if they do not
// arrive within the timeout.
func (s *Side) Wait(tb testing.TB, n int) []verbs.WorkCompletion {
	tb.Helper()
	out := make([]verbs.WorkCompletion, 0, n)
	buf := make([]verbs.WorkCompletion, n)
	ctx, cancel := context.WithTimeout(context.Background(), s.env.timeout())
	defer cancel()
	for len(out) < n {
		k, err := s.CQ.Poll(buf[:n-len(out)])
		must(tb, "poll", err)
		out = append(out, buf[:k]...)
		if len(out) == n {
			break
		}
		if err := s.CQ.Wait(ctx); err != nil {
			tb.Fatalf("waiting for %d completions (have %d: %v): %v", n, len(out), out, err)
		}
	}
	return out
}

// Quiet checks that s's queue has no completion to poll now.
func (s *Side) Quiet(tb testing.TB) {
	tb.Helper()
	var wc [4]verbs.WorkCompletion
	k, err := s.CQ.Poll(wc[:])
	must(tb, "poll", err)
	if k != 0 {
		tb.Fatalf("unexpected completions: %v", wc[:k])
	}
}

// Expect checks one completion's ID, status and, for successes, opcode.
func Expect(tb testing.TB, wc verbs.WorkCompletion, id uint64, st verbs.Status, op verbs.WCOpcode) {
	tb.Helper()
	if wc.ID != id || wc.Status != st || (st == verbs.StatusSuccess && wc.Opcode != op) {
		tb.Fatalf("completion %+v (%v): want id %#x status %q opcode %d", wc, wc.Status, id, st, op)
	}
}

// sameBytes fails the test at the first differing byte.
func sameBytes(tb testing.TB, what string, got, want []byte) {
	tb.Helper()
	if len(got) != len(want) {
		tb.Fatalf("%s: length %d, want %d", what, len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			tb.Fatalf("%s: byte %d of %d is %#x, want %#x", what, i, len(got), got[i], want[i])
		}
	}
}

// split cuts n bytes into up to k pieces of uneven sizes (each at least 1 byte when n ≥ k).
func split(n, k int) []int {
	if n < k {
		k = max(n, 1)
	}
	parts := make([]int, 0, k)
	rest := n
	for i := k; i > 1; i-- {
		p := rest / (i + 1)
		if p == 0 {
			p = 1
		}
		parts = append(parts, p)
		rest -= p
	}
	return append(parts, rest)
}

// sgl returns SGEs covering n bytes at offset off of b, cut into up to k pieces.
func (b *Buffer) sgl(off, n, k int) []verbs.SGE {
	var sg []verbs.SGE
	for _, p := range split(n, k) {
		sg = append(sg, b.SGE(off, p))
		off += p
	}
	return sg
}
