package soft

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
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

func runChild() int {
	s, err := openSide()
	if err != nil {
		fmt.Println("err", err)
		return 1
	}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<16), 1<<20)
	fmt.Println(hex.EncodeToString(s.qp.Address()))
	if !in.Scan() {
		return 1
	}
	peer, _ := hex.DecodeString(in.Text())
	if err := s.qp.Connect(peer); err != nil {
		fmt.Println("err", err)
		return 1
	}
	bufs := map[string][]byte{}
	mrs := map[string]verbs.MR{}
	for in.Scan() {
		f := strings.Fields(in.Text())
		if len(f) == 0 {
			continue
		}
		reply, err := childCommand(s, f, bufs, mrs)
		if err != nil {
			fmt.Println("err", err)
			continue
		}
		if reply == "exit" {
			return 0
		}
		fmt.Println(reply)
	}
	return 0
}

func childCommand(s *side, f []string, bufs map[string][]byte, mrs map[string]verbs.MR) (string, error) {
	arg := func(i int) int { v, _ := strconv.Atoi(f[i]); return v }
	switch f[0] {
	case "reg": // reg NAME SIZE ACCESS SEED
		b := make([]byte, arg(2))
		pattern(b, arg(4))
		m, err := s.pd.RegMR(b, verbs.Access(arg(3)))
		if err != nil {
			return "", err
		}
		bufs[f[1]], mrs[f[1]] = b, m
		return fmt.Sprintf("mr %d %d", m.Addr(), m.RKey()), nil
	case "dereg":
		return "ok", mrs[f[1]].Dereg()
	case "sum":
		// The parent synchronized with this process out of band (the command pipe)
		// after its one-sided operation completed: tell the race detector.
		raceAcquire()
		return digest(bufs[f[1]]), nil
	case "recv": // recv NAME: post a receive of the whole buffer
		m := mrs[f[1]]
		return "ok", s.qp.PostRecv([]verbs.RecvWR{{ID: 1, SG: []verbs.SGE{{Addr: m.Addr(), Length: uint32(m.Len()), LKey: m.LKey()}}}})
	case "wait": // wait for one completion
		wc, err := waitWC(s.cq, 30*time.Second)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("wc %d %d %d", wc.Status, wc.Opcode, wc.ByteLen), nil
	case "send": // send NAME LEN
		m := mrs[f[1]]
		if err := s.qp.PostSend([]verbs.SendWR{{Opcode: verbs.OpSend, Flags: verbs.SendSignaled,
			SG: []verbs.SGE{{Addr: m.Addr(), Length: uint32(arg(2)), LKey: m.LKey()}}}}); err != nil {
			return "", err
		}
		return "ok", nil
	case "echo": // echo N: answer N 8-byte messages, then report
		return childEcho(s, arg(1))
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
				s.qp.PostRecv(recv)
			}
		}
		if k == 0 {
			cpuPause()
		}
	}
	return "done", nil
}

// child is the parent's handle on a child process.
type child struct {
	t   testing.TB
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Scanner
}

// startChild starts a child and connects the parent's side to it.
func startChild(t testing.TB) (*child, *side) {
	t.Helper()
	s, err := openSide()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "SOFT_CHILD=1")
	cmd.Stderr = os.Stderr
	in, _ := cmd.StdinPipe()
	outp, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &child{t: t, cmd: cmd, in: in, out: bufio.NewScanner(outp)}
	t.Cleanup(func() {
		in.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		s.ctx.Close()
	})
	addr, err := hex.DecodeString(c.line())
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(in, hex.EncodeToString(s.qp.Address()))
	if err := s.qp.Connect(addr); err != nil {
		t.Fatal(err)
	}
	return c, s
}

func (c *child) line() string {
	c.t.Helper()
	if !c.out.Scan() {
		c.t.Fatalf("child exited: %v", c.out.Err())
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
	fmt.Fprintf(c.in, format+"\n", args...)
	return strings.Fields(c.line())
}

// reg registers a buffer in the child and returns its address and rkey.
func (c *child) reg(name string, size int, access verbs.Access, seed int) (uint64, uint32) {
	c.t.Helper()
	f := c.do("reg %s %d %d %d", name, size, access, seed)
	addr, _ := strconv.ParseUint(f[1], 10, 64)
	key, _ := strconv.ParseUint(f[2], 10, 32)
	return addr, uint32(key)
}
