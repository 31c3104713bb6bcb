package soft

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/goportals/goportals/internal/verbs"
)

// The multi-process tests re-execute the test binary as a child (SOFT_CHILD=1) that
// opens its own context, exchanges queue pair addresses over stdin/stdout, and then
// obeys one-line commands from the parent. Its progress goroutine completes the
// parent's one-sided operations while it blocks reading commands.

func TestMain(m *testing.M) {
	if os.Getenv("SOFT_CHILD") == "1" {
		os.Exit(runChild())
	}
	if m := os.Getenv(memlockChildEnv); m != "" {
		os.Exit(runMemlockChild(m))
	}
	if e := os.Getenv(seccompChildEnv); e != "" {
		os.Exit(runSeccompChild(e))
	}
	os.Exit(m.Run())
}

// side is one end of a connection inside one process.
type side struct {
	ctx *Context
	pd  verbs.PD
	cq  verbs.CQ
	qp  verbs.QP
}

func openSide() (*side, error) {
	c, err := Open()
	if err != nil {
		return nil, err
	}
	pd, err := c.AllocPD()
	if err != nil {
		return nil, err
	}
	cq, err := c.CreateCQ(1024)
	if err != nil {
		return nil, err
	}
	qp, err := pd.CreateQP(verbs.QPAttr{SendCQ: cq, RecvCQ: cq, MaxSendWR: 1024, MaxRecvWR: 1024})
	if err != nil {
		return nil, err
	}
	return &side{c, pd, cq, qp}, nil
}

// waitWC waits for one completion, failing after d.
func waitWC(cq verbs.CQ, d time.Duration) (verbs.WorkCompletion, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var wc [1]verbs.WorkCompletion
	for {
		n, err := cq.Poll(wc[:])
		if err != nil {
			return wc[0], err
		}
		if n == 1 {
			return wc[0], nil
		}
		if err := cq.Wait(ctx); err != nil {
			return wc[0], err
		}
	}
}

func pattern(b []byte, seed int) {
	for i := range b {
		b[i] = byte(i*131 + seed*7 + i>>9)
	}
}

func digest(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:8])
}

// childFaultEnv names, in a child's environment, a failure the child commits on
// purpose when its session ends (the parent closed its input): "race" (a data race
// the race detector reports), "exit1" or "panic". Only the tests of the harness set
// it; they check that the parent's verdict on the child catches each.
const childFaultEnv = "SOFT_CHILD_FAULT"

func runChild() int {
	code := childSession()
	switch os.Getenv(childFaultEnv) {
	case "race":
		deliberateRace()
	case "exit1":
		fmt.Fprintln(os.Stderr, "child: failing on purpose (exit1)")
		return 1
	case "panic":
		panic("child: panicking on purpose")
	}
	return code
}

// raceVictim is written by two goroutines with no synchronization between them.
var raceVictim int

// deliberateRace commits a data race: the two writes are unordered (the goroutine's
// write and the one after go; the channel orders neither against the other).
func deliberateRace() {
	done := make(chan struct{})
	go func() {
		raceVictim++
		close(done)
	}()
	raceVictim++
	<-done
}

func childSession() int {
	s, err := openSide()
	if err != nil {
		fmt.Println("err", err)
		return 1
	}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<16), 1<<20)
	fmt.Println(hex.EncodeToString(s.qp.Address()))
	if !in.Scan() {
		fmt.Fprintln(os.Stderr, "child: no peer address on stdin")
		return 1
	}
	peer, err := hex.DecodeString(in.Text())
	if err != nil {
		fmt.Println("err peer address:", err)
		return 1
	}
	if err := s.qp.Connect(peer); err != nil {
		fmt.Println("err", err)
		return 1
	}
	bufs := map[string][]byte{}
	mrs := map[string]verbs.MR{}
	for in.Scan() {
		// The command pipe orders this process against the parent, out of band:
		// the race detector sees no edge through another process, so declare the
		// pipe as one (the same variable the rings use). A command comes after what
		// the parent did before it, including one-sided operations on our memory
		// that completed there; what we did before a reply (read a buffer for
		// "sum", say) comes before what the parent's next messages make our
		// progress goroutine do (write that buffer).
		raceAcquire()
		f := strings.Fields(in.Text())
		if len(f) == 0 {
			continue
		}
		reply, err := childCommand(s, f, bufs, mrs)
		raceRelease()
		if err != nil {
			fmt.Println("err", err)
			continue
		}
		if reply == "exit" {
			return 0
		}
		fmt.Println(reply)
	}
	if err := in.Err(); err != nil {
		fmt.Fprintln(os.Stderr, "child: reading commands:", err)
		return 1
	}
	return 0
}

func childCommand(s *side, f []string, bufs map[string][]byte, mrs map[string]verbs.MR) (string, error) {
	var argErr error
	arg := func(i int) int {
		if i >= len(f) {
			argErr = fmt.Errorf("%s: missing argument %d", f[0], i)
			return 0
		}
		v, err := strconv.Atoi(f[i])
		if err != nil {
			argErr = fmt.Errorf("%s: argument %d: %v", f[0], i, err)
		}
		return v
	}
	need := func(n int) error {
		if len(f) < n+1 {
			return fmt.Errorf("%s: want %d arguments, have %d", f[0], n, len(f)-1)
		}
		return nil
	}
	switch f[0] {
	case "reg": // reg NAME SIZE ACCESS SEED
		size, access, seed := arg(2), arg(3), arg(4)
		if argErr != nil {
			return "", argErr
		}
		b := make([]byte, size)
		pattern(b, seed)
		m, err := s.pd.RegMR(b, verbs.Access(access))
		if err != nil {
			return "", err
		}
		bufs[f[1]], mrs[f[1]] = b, m
		return fmt.Sprintf("mr %d %d", m.Addr(), m.RKey()), nil
	case "dereg":
		if err := need(1); err != nil {
			return "", err
		}
		m, ok := mrs[f[1]]
		if !ok {
			return "", fmt.Errorf("no region %q", f[1])
		}
		return "ok", m.Dereg()
	case "sum":
		if err := need(1); err != nil {
			return "", err
		}
		b, ok := bufs[f[1]]
		if !ok {
			return "", fmt.Errorf("no buffer %q", f[1])
		}
		return digest(b), nil
	case "recv": // recv NAME: post a receive of the whole buffer
		if err := need(1); err != nil {
			return "", err
		}
		m, ok := mrs[f[1]]
		if !ok {
			return "", fmt.Errorf("no region %q", f[1])
		}
		return "ok", s.qp.PostRecv([]verbs.RecvWR{{ID: 1, SG: []verbs.SGE{{Addr: m.Addr(), Length: uint32(m.Len()), LKey: m.LKey()}}}})
	case "wait": // wait for one completion
		wc, err := waitWC(s.cq, 30*time.Second)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("wc %d %d %d", wc.Status, wc.Opcode, wc.ByteLen), nil
	case "send": // send NAME LEN
		n := arg(2)
		if argErr != nil {
			return "", argErr
		}
		m, ok := mrs[f[1]]
		if !ok {
			return "", fmt.Errorf("no region %q", f[1])
		}
		if err := s.qp.PostSend([]verbs.SendWR{{Opcode: verbs.OpSend, Flags: verbs.SendSignaled,
			SG: []verbs.SGE{{Addr: m.Addr(), Length: uint32(n), LKey: m.LKey()}}}}); err != nil {
			return "", err
		}
		return "ok", nil
	case "echo": // echo N: answer N 8-byte messages, then report
		n := arg(1)
		if argErr != nil {
			return "", argErr
		}
		return childEcho(s, n)
	case "exit":
		return "exit", nil
	}
	return "", fmt.Errorf("unknown command %q", f[0])
}

// childEcho answers n ping-pong messages of 8 bytes by polling (the latency path).
func childEcho(s *side, n int) (string, error) {
	buf := make([]byte, 64)
	m, err := s.pd.RegMR(buf, verbs.AccessLocalWrite)
	if err != nil {
		return "", err
	}
	defer m.Dereg()
	recv := []verbs.RecvWR{{SG: []verbs.SGE{{Addr: m.Addr(), Length: 8, LKey: m.LKey()}}}}
	send := []verbs.SendWR{{Opcode: verbs.OpSend, Flags: verbs.SendInline,
		SG: []verbs.SGE{{Addr: m.Addr() + 32, Length: 8}}}}
	for i := 0; i < 64; i++ {
		if err := s.qp.PostRecv(recv); err != nil {
			return "", err
		}
	}
	raceRelease() // as after any command (childSession)
	fmt.Println("ready")
	var wc [8]verbs.WorkCompletion
	for got := 0; got < n; {
		k, err := s.cq.Poll(wc[:])
		if err != nil {
			return "", err
		}
		for _, c := range wc[:k] {
			if c.Status != verbs.StatusSuccess {
				return "", fmt.Errorf("echo: %v", c.Status)
			}
			if c.Opcode == verbs.WCRecv {
				got++
				if err := s.qp.PostSend(send); err != nil { // reply first, replenish after
					return "", err
				}
				if err := s.qp.PostRecv(recv); err != nil {
					return "", err
				}
			}
		}
		if k == 0 {
			cpuPause()
		}
	}
	return "done", nil
}

// child is the parent's handle on a child process. Its stderr is kept: the verdict
// on the child (finish) shows it when the child failed.
type child struct {
	t      testing.TB
	cmd    *exec.Cmd
	in     *os.File // the child's stdin
	outR   *os.File // the child's stdout
	out    *bufio.Scanner
	stderr lockedBuffer
	exited chan struct{} // closed once cmd.Wait returned (waitErr is set)
	// waitErr is cmd.Wait's result: an *exec.ExitError for a non-zero status or a signal.
	waitErr error
	killed  atomic.Bool // the test killed the child on purpose (kill)

	finishOnce sync.Once
	verdict    error
	// ownVerdict: the test checks finish's result itself, so the cleanup does not
	// report it (the tests of the harness, whose children fail on purpose).
	ownVerdict bool
}

// lockedBuffer collects a child's stderr (written by exec's copying goroutine).
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

const (
	// childExitTimeout bounds how long a child may take to exit once its input closed.
	childExitTimeout = 20 * time.Second
	// childReplyTimeout bounds the wait for one line from a child (its "wait"
	// command alone may take 30 s).
	childReplyTimeout = 2 * time.Minute
)

// childWrap, when set, is the command the child runs under (e.g. `ip netns exec
// NS`, to put it on another node).
var childWrap []string

// spawnChild starts the test binary as a child (SOFT_CHILD=1) with fault (see
// childFaultEnv; "" for none). Its stdin and stdout are plain pipes the parent owns,
// so a goroutine can wait for the exit while the parent still reads replies.
func spawnChild(fault string) (*child, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	c := &child{in: inW, outR: outR, out: bufio.NewScanner(outR), exited: make(chan struct{})}
	c.out.Buffer(make([]byte, 1<<16), 1<<20)
	argv := append(append([]string(nil), childWrap...), os.Args[0], "-test.run=^$")
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), "SOFT_CHILD=1", childFaultEnv+"="+fault)
	if g := os.Getenv("GORACE"); !strings.Contains(g, "atexit_sleep_ms") {
		// A race-enabled child sleeps 1 s at exit by default (for reports still
		// being written); the verdict waits for every exit.
		cmd.Env = append(cmd.Env, "GORACE="+strings.TrimSpace(g+" atexit_sleep_ms=100"))
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, &c.stderr
	err = cmd.Start()
	inR.Close() // the child holds its own copies
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, err
	}
	c.cmd = cmd
	go func() {
		c.waitErr = cmd.Wait()
		close(c.exited)
	}()
	return c, nil
}

// kill kills the child on purpose: its death by SIGKILL is then no failure.
func (c *child) kill() {
	c.killed.Store(true)
	if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		c.t.Fatalf("killing the child: %v", err)
	}
}

// waitExit waits until the child process has exited (and been reaped).
func (c *child) waitExit(d time.Duration) error {
	select {
	case <-c.exited:
		return nil
	case <-time.After(d):
		return fmt.Errorf("child %d still running after %v", c.cmd.Process.Pid, d)
	}
}

// finish ends the child's session (closes its input), waits for it to exit (killing
// it after childExitTimeout) and returns the verdict: an error when the child exited
// with a non-zero status (66 is the race detector's), died of a signal the test did
// not send, hung, or wrote a data race report, a panic or a fatal error to its
// stderr, which the error includes. It is idempotent.
func (c *child) finish() error {
	c.finishOnce.Do(func() {
		c.in.Close()
		var problems []string
		select {
		case <-c.exited:
		case <-time.After(childExitTimeout):
			problems = append(problems, fmt.Sprintf("did not exit within %v of its input closing (killed)", childExitTimeout))
			c.cmd.Process.Kill()
			<-c.exited
		}
		c.outR.Close()
		stderr := c.stderr.String()
		var ee *exec.ExitError
		switch {
		case c.waitErr == nil:
		case errors.As(c.waitErr, &ee):
			ws, _ := ee.Sys().(syscall.WaitStatus)
			switch {
			case ws.Signaled() && ws.Signal() == syscall.SIGKILL && (c.killed.Load() || len(problems) > 0):
				// killed by the test, or above for hanging
			case ee.ExitCode() == 66:
				problems = append(problems, "exited with status 66 (the race detector's: it reported a data race)")
			default:
				problems = append(problems, "exited: "+ee.Error())
			}
		default:
			problems = append(problems, "wait: "+c.waitErr.Error())
		}
		for _, m := range []struct{ marker, what string }{
			{"WARNING: DATA RACE", "reported a data race"},
			{"panic: ", "panicked"},
			{"fatal error: ", "died of a fatal error"},
		} {
			if strings.Contains(stderr, m.marker) {
				problems = append(problems, m.what)
			}
		}
		if len(problems) > 0 {
			c.verdict = fmt.Errorf("child process %d %s; its stderr:\n%s", c.cmd.Process.Pid,
				strings.Join(problems, ", "), stderr)
		}
	})
	return c.verdict
}

// startChild starts a child and connects the parent's side to it. When the test
// ends, the child's session is closed and the test fails unless the child exited
// cleanly (finish).
func startChild(t testing.TB) (*child, *side) { return startChildFault(t, "") }

// startChildFault is startChild for a child that commits fault when its session ends.
func startChildFault(t testing.TB, fault string) (*child, *side) {
	t.Helper()
	return startChildMessages(t, fault, 0)
}

// startChildMessages is startChildFault whose queue pair is in message mode
// (tag 7, messages of at most msgMax bytes) when msgMax > 0.
func startChildMessages(t testing.TB, fault string, msgMax int) (*child, *side) {
	t.Helper()
	s, err := openSide()
	if err != nil {
		t.Fatal(err)
	}
	if msgMax > 0 {
		if err := s.qp.(verbs.MessageQP).EnableMessages(7, msgMax); err != nil {
			s.ctx.Close()
			t.Fatal(err)
		}
	}
	c, err := spawnChild(fault)
	if err != nil {
		s.ctx.Close()
		t.Fatal(err)
	}
	c.t = t
	t.Cleanup(func() {
		if err := c.finish(); err != nil && !c.ownVerdict {
			t.Error(err)
		} else if err == nil && testing.Verbose() {
			if e := c.stderr.String(); e != "" {
				t.Logf("child stderr:\n%s", e)
			}
		}
		if err := s.ctx.Close(); err != nil {
			t.Errorf("closing the parent's context: %v", err)
		}
	})
	addr, err := hex.DecodeString(c.line())
	if err != nil {
		t.Fatalf("child's address: %v", err)
	}
	if _, err := fmt.Fprintln(c.in, hex.EncodeToString(s.qp.Address())); err != nil {
		t.Fatalf("sending the child our address: %v (%v)", err, c.finish())
	}
	if err := s.qp.Connect(addr); err != nil {
		t.Fatal(err)
	}
	return c, s
}

// line reads the child's next reply. A child that exits or stays silent fails the
// test with the verdict on it (its stderr included); an "err" reply fails it too.
func (c *child) line() string {
	c.t.Helper()
	if err := c.outR.SetReadDeadline(time.Now().Add(childReplyTimeout)); err != nil {
		c.t.Fatalf("child stdout: %v", err)
	}
	if !c.out.Scan() {
		err := c.out.Err()
		if err == nil {
			err = io.EOF
		}
		c.t.Fatalf("no reply from the child (%v): %v", err, c.finish())
	}
	l := c.out.Text()
	if strings.HasPrefix(l, "err") {
		c.t.Fatalf("child: %s", l)
	}
	return l
}

// do sends one command and returns the reply's fields.
func (c *child) do(format string, args ...any) []string {
	c.t.Helper()
	if _, err := fmt.Fprintf(c.in, format+"\n", args...); err != nil {
		c.t.Fatalf("sending the child %q: %v (%v)", format, err, c.finish())
	}
	return strings.Fields(c.line())
}

// reg registers a buffer in the child and returns its address and rkey.
func (c *child) reg(name string, size int, access verbs.Access, seed int) (uint64, uint32) {
	c.t.Helper()
	f := c.do("reg %s %d %d %d", name, size, access, seed)
	if len(f) != 3 || f[0] != "mr" {
		c.t.Fatalf("child's reply to reg: %q", f)
	}
	addr, err := strconv.ParseUint(f[1], 10, 64)
	if err != nil {
		c.t.Fatalf("child's region address: %v", err)
	}
	key, err := strconv.ParseUint(f[2], 10, 32)
	if err != nil {
		c.t.Fatalf("child's rkey: %v", err)
	}
	return addr, uint32(key)
}
