package bootstrap

import (
	"bufio"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// A ptlrun agent starts ranks on its node for a launcher on another: ptlrun
// -hosts connects to one agent per node, sends each the ranks it runs (program,
// arguments, environment with the PTL_* bootstrap variables), and gets back their
// output lines and exit statuses; a signal the launcher forwards or a teardown
// goes the other way. No ssh is involved: the agents are started once per node
// (by hand, by the batch system, or in the tests inside network namespaces).
//
// The stream is JSON, one object a line. Both ends prove that they hold the
// agents' shared key without sending it (a challenge and response): the agent
// opens with a random challenge (agentMsg.Nonce); the launcher answers with its
// own challenge and an HMAC-SHA256 under the key of both challenges (agentAuth);
// the agent checks it, refuses another key ("wrong agent key"), and proves the
// key in turn (agentMsg.Proof, an HMAC of both challenges in the other order and
// under another label). Only then does the launcher send its agentRequest, whose
// rank environments carry the job's own secret. An unauthenticated line is
// bounded (maxAgentAuthLine), and so is the number of connections not yet
// authenticated (maxAgentUnauth). When the launcher's connection ends, or the
// agent is stopped, the agent kills the ranks it started for it: no rank outlives
// its job.

// Bounds on what the agent reads from a launcher.
const (
	// maxAgentAuthLine bounds a line from a connection that has not proved the key.
	maxAgentAuthLine = 1 << 20
	// maxAgentRequest bounds the request of an authenticated launcher.
	maxAgentRequest = 256 << 20
	// maxAgentUnauth bounds the connections that have not proved the key yet.
	maxAgentUnauth = 16
)

// Labels of the two proofs, so that neither end's proof serves as the other's.
const (
	proofLauncher = "goportals ptlrun agent: launcher"
	proofAgent    = "goportals ptlrun agent: agent"
)

// agentAuth is the launcher's first line: its challenge and its proof of the key.
type agentAuth struct {
	Nonce string `json:"nonce"`
	Proof string `json:"proof"`
}

// newNonce draws a challenge: 32 random bytes in hex.
func newNonce() string {
	var b [32]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// prove returns the HMAC-SHA256, in hex, under key of label and the challenges.
func prove(key, label, first, second string) string {
	m := hmac.New(sha256.New, []byte(key))
	m.Write([]byte(label))
	m.Write([]byte{0})
	m.Write([]byte(first))
	m.Write([]byte{0})
	m.Write([]byte(second))
	return hex.EncodeToString(m.Sum(nil))
}

// proofOK checks a proof in constant time.
func proofOK(got, key, label, first, second string) bool {
	return hmac.Equal([]byte(got), []byte(prove(key, label, first, second)))
}

// errLineTooLong: a line exceeds its bound.
var errLineTooLong = errors.New("line too long")

// readLine reads one line of at most max bytes (without its newline).
func readLine(r *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		frag, err := r.ReadSlice('\n')
		if len(line)+len(frag) > max+1 {
			return nil, errLineTooLong
		}
		line = append(line, frag...)
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			return nil, err
		}
		return line[:len(line)-1], nil
	}
}

// agentRequest is a launcher's request: the ranks to start here.
type agentRequest struct {
	Argv  []string    `json:"argv"`
	Dir   string      `json:"dir,omitempty"`
	Ranks []agentRank `json:"ranks"`
	Grace string      `json:"grace,omitempty"`
}

type agentRank struct {
	Rank int      `json:"rank"`
	Env  []string `json:"env"`
}

// agentMsg travels both ways: from the agent, a start (Pid), an output line
// (Stream, Line) or an end (Exit, Signal, Err) of Rank; from the launcher, a
// signal for every rank (Signal).
type agentMsg struct {
	Rank   int    `json:"rank"`
	Pid    int    `json:"pid,omitempty"`
	Stream string `json:"stream,omitempty"` // "out" or "err"
	Line   string `json:"line,omitempty"`
	Exit   *int   `json:"exit,omitempty"`
	Signal int    `json:"signal,omitempty"`
	Err    string `json:"err,omitempty"`
	Fatal  string `json:"fatal,omitempty"` // the request was refused
	Nonce  string `json:"nonce,omitempty"` // the agent's challenge (its first message)
	Proof  string `json:"proof,omitempty"` // the agent's proof of the key
}

// ServeAgent serves launchers on ln until ctx ends: each connection is one job's
// ranks on this node. key is the secret launchers must present (not empty).
func ServeAgent(ctx context.Context, ln net.Listener, key string) error {
	if key == "" {
		return opErr("agent", -1, "", errDetail(ErrAuth, "an agent needs a key"))
	}
	go func() {
		<-ctx.Done()
		ln.Close()
	}()
	var wg sync.WaitGroup
	defer wg.Wait()
	unauth := make(chan struct{}, maxAgentUnauth)
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return opErr("agent", -1, "", err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			serveAgentConn(ctx, c, key, unauth)
		}()
	}
}

// agentWriter serializes the agent's messages to one launcher.
type agentWriter struct {
	mu  sync.Mutex
	enc *json.Encoder
	err error
}

func (w *agentWriter) send(m agentMsg) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		w.err = w.enc.Encode(m)
	}
}

// agentLines passes a rank's output to the launcher a line at a time.
type agentLines struct {
	w      *agentWriter
	rank   int
	stream string
	buf    []byte
}

func (l *agentLines) Write(p []byte) (int, error) {
	l.buf = append(l.buf, p...)
	for {
		i := -1
		for k, b := range l.buf {
			if b == '\n' {
				i = k
				break
			}
		}
		if i < 0 {
			if len(l.buf) > maxLine {
				l.flush()
			}
			return len(p), nil
		}
		l.w.send(agentMsg{Rank: l.rank, Stream: l.stream, Line: string(l.buf[:i])})
		l.buf = l.buf[i+1:]
	}
}

func (l *agentLines) flush() {
	if len(l.buf) > 0 {
		l.w.send(agentMsg{Rank: l.rank, Stream: l.stream, Line: string(l.buf)})
		l.buf = nil
	}
}

// authenticate runs the agent's side of the challenge and response; it reports
// whether the launcher proved the key (and this agent proved it back).
func authenticate(c net.Conn, r *bufio.Reader, w *agentWriter, key string, unauth chan struct{}) bool {
	select {
	case unauth <- struct{}{}:
		defer func() { <-unauth }()
	default:
		w.send(agentMsg{Fatal: "too many unauthenticated connections"})
		return false
	}
	c.SetDeadline(time.Now().Add(10 * time.Second))
	defer c.SetDeadline(time.Time{})
	nonce := newNonce()
	w.send(agentMsg{Nonce: nonce})
	line, err := readLine(r, maxAgentAuthLine)
	if errors.Is(err, errLineTooLong) {
		w.send(agentMsg{Fatal: fmt.Sprintf("line too long (more than %d bytes before authentication)", maxAgentAuthLine)})
		return false
	}
	if err != nil {
		return false
	}
	var a agentAuth
	if err := json.Unmarshal(line, &a); err != nil || a.Nonce == "" {
		w.send(agentMsg{Fatal: "malformed authentication"})
		return false
	}
	if !proofOK(a.Proof, key, proofLauncher, nonce, a.Nonce) {
		w.send(agentMsg{Fatal: "wrong agent key"})
		return false
	}
	w.send(agentMsg{Proof: prove(key, proofAgent, a.Nonce, nonce)})
	return w.err == nil
}

func serveAgentConn(ctx context.Context, c net.Conn, key string, unauth chan struct{}) {
	defer c.Close()
	r := bufio.NewReader(c)
	w := &agentWriter{enc: json.NewEncoder(c)}
	if !authenticate(c, r, w, key, unauth) {
		return
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	line, err := readLine(r, maxAgentRequest)
	if err != nil {
		if errors.Is(err, errLineTooLong) {
			w.send(agentMsg{Fatal: fmt.Sprintf("request too long (more than %d bytes)", maxAgentRequest)})
		}
		return
	}
	var req agentRequest
	if err := json.Unmarshal(line, &req); err != nil {
		w.send(agentMsg{Fatal: "malformed request: " + err.Error()})
		return
	}
	if len(req.Argv) == 0 || len(req.Ranks) == 0 {
		w.send(agentMsg{Fatal: "no program or no rank"})
		return
	}
	c.SetReadDeadline(time.Time{})
	grace, _ := time.ParseDuration(req.Grace)
	if grace <= 0 {
		grace = DefaultGrace
	}
	path, err := exec.LookPath(req.Argv[0])
	if err != nil {
		for _, rk := range req.Ranks {
			code := ExitNotFound
			w.send(agentMsg{Rank: rk.Rank, Exit: &code, Err: err.Error()})
		}
		return
	}
	var mu sync.Mutex
	pids := map[int]int{}
	var wg sync.WaitGroup
	for _, rk := range req.Ranks {
		cmd := &exec.Cmd{Path: path, Args: req.Argv, Env: rk.Env, Dir: req.Dir, SysProcAttr: sysProcAttr(), WaitDelay: grace}
		so := &agentLines{w: w, rank: rk.Rank, stream: "out"}
		se := &agentLines{w: w, rank: rk.Rank, stream: "err"}
		cmd.Stdout, cmd.Stderr = so, se
		if err := cmd.Start(); err != nil {
			code := ExitNotExec
			w.send(agentMsg{Rank: rk.Rank, Exit: &code, Err: err.Error()})
			continue
		}
		mu.Lock()
		pids[rk.Rank] = cmd.Process.Pid
		mu.Unlock()
		w.send(agentMsg{Rank: rk.Rank, Pid: cmd.Process.Pid})
		wg.Add(1)
		go func(rank int) {
			defer wg.Done()
			err := cmd.Wait()
			so.flush()
			se.flush()
			m := agentMsg{Rank: rank}
			if cmd.ProcessState != nil {
				code, sig := exitOf(cmd.ProcessState)
				m.Exit, m.Signal = &code, int(sig)
			} else {
				m.Err = fmt.Sprint(err)
			}
			mu.Lock()
			delete(pids, rank)
			mu.Unlock()
			w.send(m)
		}(rk.Rank)
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	signalAll := func(sig syscall.Signal) {
		mu.Lock()
		defer mu.Unlock()
		for _, pid := range pids {
			signalGroup(pid, sig)
		}
	}
	// Signals from the launcher; its end (or a broken stream) kills the ranks.
	gone := make(chan struct{})
	go func() {
		defer close(gone)
		for {
			line, err := r.ReadBytes('\n')
			if err != nil {
				return
			}
			var m agentMsg
			if json.Unmarshal(line, &m) == nil && m.Signal > 0 {
				signalAll(syscall.Signal(m.Signal))
			}
		}
	}()
	select {
	case <-done:
	case <-ctx.Done():
		c.Close() // the agent is stopping: its ranks go too
		<-gone
		signalAll(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(grace):
			signalAll(syscall.SIGKILL)
			<-done
		}
	case <-gone:
		signalAll(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(grace):
			signalAll(syscall.SIGKILL)
			<-done
		}
	}
}

// agentConn is the launcher's connection to one agent.
type agentConn struct {
	addr string
	conn net.Conn
	r    *bufio.Reader
	mu   sync.Mutex
	enc  *json.Encoder
}

func (a *agentConn) send(m agentMsg) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.enc.Encode(m)
}

// remoteProc is a rank an agent started.
type remoteProc struct {
	a    *agentConn
	rank int
}

// signal forwards sig to the agent, which signals all the job's ranks there (the
// launcher signals every rank at once anyway, spared suspects aside).
func (p remoteProc) signal(sig syscall.Signal) { p.a.send(agentMsg{Rank: p.rank, Signal: int(sig)}) }

// startRemote sends every agent its ranks and relays their events into the job.
func (j *job) startRemote() {
	hosts := j.cfg.Hosts
	j.procs = make([]rankProc, j.cfg.N)
	byHost := make([][]agentRank, len(hosts))
	for r := range j.cfg.N {
		h := r % len(hosts)
		byHost[h] = append(byHost[h], agentRank{Rank: r, Env: j.env(r)})
	}
	dir := j.cfg.Dir
	if dir == "" {
		dir, _ = os.Getwd()
	}
	for h, addr := range hosts {
		if len(byHost[h]) == 0 {
			continue
		}
		conn, err := net.DialTimeout("tcp", addr, 10*time.Second)
		if err != nil {
			j.remoteStartFailed(byHost[h:], fmt.Errorf("agent %s: %w", addr, err))
			return
		}
		a := &agentConn{addr: addr, conn: conn, r: bufio.NewReader(conn), enc: json.NewEncoder(conn)}
		if err := a.authenticate(j.cfg.AgentKey); err != nil {
			conn.Close()
			j.remoteStartFailed(byHost[h:], fmt.Errorf("agent %s: %w", addr, err))
			return
		}
		j.agents = append(j.agents, a)
		req := agentRequest{Argv: j.cfg.Argv, Dir: dir, Ranks: byHost[h], Grace: j.cfg.Grace.String()}
		a.mu.Lock()
		err = a.enc.Encode(req)
		a.mu.Unlock()
		if err != nil {
			conn.Close()
			j.remoteStartFailed(byHost[h:], fmt.Errorf("agent %s: %w", addr, err))
			return
		}
		pending := map[int]bool{}
		for _, rk := range byHost[h] {
			j.procs[rk.Rank] = remoteProc{a: a, rank: rk.Rank}
			j.res.Ranks[rk.Rank].Pid = -1 // started remotely; its pid is the agent's to know
			pending[rk.Rank] = true
			j.running++
		}
		go j.relay(a, pending)
	}
}

// authenticate runs the launcher's side of the challenge and response: it proves
// key to the agent and checks the agent's proof, before anything of the job goes.
func (a *agentConn) authenticate(key string) error {
	a.conn.SetDeadline(time.Now().Add(10 * time.Second))
	defer a.conn.SetDeadline(time.Time{})
	read := func() (agentMsg, error) {
		var m agentMsg
		line, err := readLine(a.r, maxAgentAuthLine)
		if err != nil {
			return m, err
		}
		if err := json.Unmarshal(line, &m); err != nil {
			return m, fmt.Errorf("malformed message: %w", err)
		}
		if m.Fatal != "" {
			return m, fmt.Errorf("refused the job: %s", m.Fatal)
		}
		return m, nil
	}
	m, err := read()
	if err != nil {
		return err
	}
	if m.Nonce == "" {
		return errors.New("no challenge (not a ptlrun agent of this version?)")
	}
	return a.finishAuth(key, m.Nonce, newNonce(), read)
}

// finishAuth sends the launcher's proof and checks the agent's.
func (a *agentConn) finishAuth(key, theirs, mine string, read func() (agentMsg, error)) error {
	a.mu.Lock()
	err := a.enc.Encode(agentAuth{Nonce: mine, Proof: prove(key, proofLauncher, theirs, mine)})
	a.mu.Unlock()
	if err != nil {
		return err
	}
	m, err := read()
	if err != nil {
		return err
	}
	if !proofOK(m.Proof, key, proofAgent, mine, theirs) {
		return errors.New("the agent did not prove the agents' key (an impostor, or another key)")
	}
	return nil
}

// remoteStartFailed fails the job for ranks that could not be handed to an agent.
func (j *job) remoteStartFailed(rest [][]agentRank, err error) {
	first := -1
	for _, rks := range rest {
		for _, rk := range rks {
			j.res.Ranks[rk.Rank].Err = err
			j.srv.RankExited(rk.Rank, false)
			if first < 0 || rk.Rank < first {
				first = rk.Rank
			}
		}
	}
	j.fail(max(first, 0), ExitNotExec, errDetail(ErrStart, "%v", err))
}

// relay turns one agent's messages into output and rank exits; a broken stream
// ends the ranks it still ran as lost.
func (j *job) relay(a *agentConn, pending map[int]bool) {
	outs := map[int][2]*lineWriter{}
	w := func(rank int) [2]*lineWriter {
		if lw, ok := outs[rank]; ok {
			return lw
		}
		lw := [2]*lineWriter{newLineWriter(j.out, rank, j.cfg.Prefix), newLineWriter(j.errOut, rank, j.cfg.Prefix)}
		outs[rank] = lw
		return lw
	}
	for len(pending) > 0 {
		line, err := a.r.ReadBytes('\n')
		if err != nil {
			for rank := range pending {
				j.exits <- rankExit{rank: rank, err: fmt.Errorf("agent %s: connection lost: %w", a.addr, err)}
			}
			return
		}
		var m agentMsg
		if err := json.Unmarshal(line, &m); err != nil {
			continue
		}
		switch {
		case m.Fatal != "":
			for rank := range pending {
				j.exits <- rankExit{rank: rank, err: fmt.Errorf("agent %s refused the job: %s", a.addr, m.Fatal)}
			}
			return
		case m.Stream != "":
			lw := w(m.Rank)
			i := 0
			if m.Stream == "err" {
				i = 1
			}
			lw[i].Write([]byte(m.Line + "\n"))
		case m.Exit != nil || m.Err != "":
			if !pending[m.Rank] {
				continue
			}
			delete(pending, m.Rank)
			if lw, ok := outs[m.Rank]; ok {
				lw[0].flush()
				lw[1].flush()
			}
			e := rankExit{rank: m.Rank}
			switch {
			case m.Err != "": // never started, or not reaped
				e.err = fmt.Errorf("agent %s: rank %d: %s", a.addr, m.Rank, m.Err)
			default:
				e.ok, e.code, e.sig = true, *m.Exit, syscall.Signal(m.Signal)
			}
			j.exits <- e
		}
	}
	a.conn.Close()
}
