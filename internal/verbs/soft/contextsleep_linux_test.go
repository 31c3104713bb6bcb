package soft

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/goportals/goportals/internal/verbs"
	"github.com/goportals/goportals/internal/verbs/verbstest"
)

// goroutineState returns the state, as the runtime's goroutine dump shows it
// ("syscall", "select", "IO wait", "runnable", ...), of the goroutine whose
// stack contains frame, or none if no goroutine's does.
func goroutineState(frame, none string) string {
	buf := make([]byte, 1<<20)
	for n := runtime.Stack(buf, true); n == len(buf); n = runtime.Stack(buf, true) {
		buf = make([]byte, 2*len(buf))
	}
	for _, g := range strings.Split(string(buf), "\n\n") {
		if !strings.Contains(g, frame) {
			continue
		}
		head, _, _ := strings.Cut(g, "\n")
		_, st, ok := strings.Cut(head, "[")
		if !ok {
			return head
		}
		st, _, _ = strings.Cut(st, "]")
		st, _, _ = strings.Cut(st, ",")
		return st
	}
	return none
}

// runState returns the state of the goroutine running c's progress loop
// (Context.run).
func runState(c *Context) string {
	return goroutineState(fmt.Sprintf("(*Context).run(%p", c), "(no progress goroutine)")
}

// waitParked waits until c's progress goroutine sleeps parked (three dumps
// in a row in a select with parked set), as it does once idle with only its
// own queue pairs: a nap (the application polled a moment ago) is a select
// too, with parked clear.
func waitParked(t *testing.T, c *Context, round int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	last, same := "", 0
	for same < 3 {
		st := runState(c)
		if st == "select" && c.parked.Load() {
			same++
		} else {
			same = 0
		}
		last = st
		if time.Now().After(deadline) {
			t.Fatalf("round %d: the progress goroutine never slept parked: last state %q, parked %v",
				round, last, c.parked.Load())
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// sleepsParked waits until c's progress goroutine is asleep and reports
// whether it sleeps parked (three dumps in a row in a select with parked set)
// or in futex(2) (three in a row in a system call).
func sleepsParked(t *testing.T, c *Context) bool {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	last, same := "", 0
	for {
		st := runState(c)
		if st == "select" && !c.parked.Load() {
			st = "napping" // (a nap: the application polled a moment ago)
		}
		if (st == "select" || st == "syscall") && st == last {
			if same++; same == 3 {
				return st == "select"
			}
		} else {
			same = 0
		}
		last = st
		if time.Now().After(deadline) {
			t.Fatalf("the progress goroutine never slept: last state %q", last)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// ownSide opens a context whose only queue pairs are joined to each other (as
// an NI's connection to its own process joins its context to itself).
func ownSide(t *testing.T) (*Context, *verbstest.Side, *qp, *qp) {
	t.Helper()
	c, err := Open()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	pd, err := c.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	cq, err := c.CreateCQ(64)
	if err != nil {
		t.Fatal(err)
	}
	s := &verbstest.Side{Ctx: c, PD: pd, CQ: cq}
	a, b := joinQPs(t, s, s)
	return c, s, a, b
}

// TestContextSleepsParkedWithoutOtherContexts: when no queue pair joins the
// context to another context of the node (no peer at all, only its connection
// to itself, or only TCP links), the idle progress goroutine sleeps parked in
// Go's scheduler, not in futex(2): a goroutine blocked in a system call keeps
// its P until sysmon takes it back, and that sets sysmon waking every 20 µs
// for the next millisecond, each wake taking a core from the threads that spin
// (a rank's caller polling its links). No other process wakes it through the
// futex word then anyway. With a queue pair joined to another context it does
// sleep on the futex word, which that peer clears and wakes.
func TestContextSleepsParkedWithoutOtherContexts(t *testing.T) {
	c, err := Open()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if !sleepsParked(t, c) {
		t.Errorf("no peer: the progress goroutine sleeps in futex(2), want it parked")
	}

	own, _, _, _ := ownSide(t)
	if !sleepsParked(t, own) {
		t.Errorf("joined to itself only: the progress goroutine sleeps in futex(2), want it parked")
	}

	t.Setenv(EnvPath, "tcp")
	p := verbstest.NewPair(t, softEnv)
	tcpPingPong(t, p, 1)
	// (out of a sleep it chose before the links existed: TCP links do not
	// join the active set, which wakes it to choose again)
	p.A.QP.(*qp).ctx.kick()
	if !sleepsParked(t, p.A.QP.(*qp).ctx) {
		t.Errorf("TCP links only: the progress goroutine sleeps in futex(2), want it parked")
	}

	t.Setenv(EnvPath, "")
	q := verbstest.NewPair(t, softEnv)
	if sleepsParked(t, q.A.QP.(*qp).ctx) {
		t.Errorf("joined to another context: the progress goroutine sleeps parked, want futex(2) (on the word the peer wakes)")
	}
}

// TestOwnPostWakesParkedProgress: a SEND posted on a queue pair joined to its
// own context wakes that context's progress goroutine where it sleeps parked,
// which completes the receive with nobody polling (the sleep's bound made an
// hour, so only the wake can end it).
func TestOwnPostWakesParkedProgress(t *testing.T) {
	c, s, a, b := ownSide(t)
	c.sleepFor.Store(int64(time.Hour))
	c.kick() // (out of a sleep that began with the old bound)
	src := s.Reg(t, 64, verbs.AccessLocalWrite, 0x5a)
	dst := s.Reg(t, 64, verbs.AccessLocalWrite, 0)
	for round := 0; round < 3; round++ {
		waitParked(t, c, round)
		ownSendWoken(t, s, a, b, src, dst, round, "the SEND")
	}
}

// TestOwnPostWakesParkedProgressAfterStrayWake: another context joined to a
// queue pair of ours that is not active here (not connected on our side, or
// destroyed) still posts to it and wakes through the futex word, which a
// parked goroutine does not watch: that must not cost the next post of this
// process its wake (the parked goroutine once left the word set, the stray
// waker cleared it, and an own post that found the word clear woke nobody).
func TestOwnPostWakesParkedProgressAfterStrayWake(t *testing.T) {
	c, s, a, b := ownSide(t)
	c.sleepFor.Store(int64(time.Hour))
	c.kick()
	// A queue pair of c that stays unconnected, and another context's queue
	// pair joined to it.
	qc, err := s.PD.CreateQP(verbs.QPAttr{SendCQ: s.CQ, RecvCQ: s.CQ, MaxSendWR: 16, MaxRecvWR: 16, MaxSGE: 1})
	if err != nil {
		t.Fatal(err)
	}
	d := verbstest.NewPair(t, softEnv).A
	qd, err := d.PD.CreateQP(verbs.QPAttr{SendCQ: d.CQ, RecvCQ: d.CQ, MaxSendWR: 16, MaxRecvWR: 16, MaxSGE: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := qd.Connect(qc.Address()); err != nil {
		t.Fatal(err)
	}
	msg := make([]byte, 8)
	src := s.Reg(t, 64, verbs.AccessLocalWrite, 0x5a)
	dst := s.Reg(t, 64, verbs.AccessLocalWrite, 0)
	for round := 0; round < 3; round++ {
		waitParked(t, c, round)
		// The stray post: into the ring qc would read, waking c's word.
		if err := qd.PostSend([]verbs.SendWR{{ID: uint64(round), Opcode: verbs.OpSend, Flags: verbs.SendInline,
			SG: []verbs.SGE{{Addr: addrOfBytes(msg), Length: 8}}}}); err != nil {
			t.Fatal(err)
		}
		// This process's own post must still wake c's goroutine.
		ownSendWoken(t, s, a, b, src, dst, round, "an own SEND that followed a stray wake")
	}
}

// ownSendWoken posts a receive on b and a signaled SEND of src on a (joined
// to each other in one context, whose progress goroutine sleeps parked), and
// waits, polling nothing, until a completion shows (the poster's wake ran
// the goroutine's round), then takes the send's and the receive's.
func ownSendWoken(t *testing.T, s *verbstest.Side, a, b *qp, src, dst *verbstest.Buffer, round int, what string) {
	t.Helper()
	if err := b.PostRecv([]verbs.RecvWR{{ID: uint64(round), SG: []verbs.SGE{dst.SGE(0, 64)}}}); err != nil {
		t.Fatal(err)
	}
	if err := a.PostSend([]verbs.SendWR{{ID: 100 + uint64(round), Opcode: verbs.OpSend, Flags: verbs.SendSignaled,
		SG: []verbs.SGE{src.SGE(0, 64)}}}); err != nil {
		t.Fatal(err)
	}
	cq := s.CQ.(*cq)
	deadline := time.Now().Add(10 * time.Second)
	for !cq.hasCompletion() {
		if time.Now().After(deadline) {
			t.Fatalf("round %d: no completion 10 s after %s, nobody polling: the parked progress goroutine was not woken", round, what)
		}
		time.Sleep(time.Millisecond)
	}
	var wc [4]verbs.WorkCompletion
	got := 0
	for got < 2 && time.Now().Before(deadline) {
		n, err := s.CQ.Poll(wc[:])
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range wc[:n] {
			if w.Status != verbs.StatusSuccess {
				t.Fatalf("round %d: completion %+v", round, w)
			}
		}
		got += n
	}
	if got != 2 {
		t.Fatalf("round %d: %d completions, want the send's and the receive's", round, got)
	}
}
