package bootstrap

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"
)

// DefaultGrace is the time between SIGTERM and SIGKILL when a job is torn down.
const DefaultGrace = 3 * time.Second

// Exit statuses Launch reports when no rank's own status applies.
const (
	ExitTimeout  = 124 // the job ran past its timeout (as timeout(1))
	ExitNotExec  = 126 // the program exists but cannot be run
	ExitNotFound = 127 // the program was not found
)

// LaunchConfig describes a job for Launch.
type LaunchConfig struct {
	// N is the number of ranks (≥ 1).
	N int
	// Argv is the program and its arguments; Argv[0] is looked up in PATH.
	Argv []string
	// Env is the ranks' environment; nil means the launcher's own (os.Environ()).
	// The PTL_* variables of each rank are added, replacing any given here.
	Env []string
	// Dir is the ranks' working directory; empty means the launcher's.
	Dir string
	// Stdout and Stderr receive the ranks' output, whole lines at a time; nil
	// discards it. Ranks get no standard input.
	Stdout, Stderr io.Writer
	// Prefix starts every output line with "[rank] ".
	Prefix bool
	// Timeout ends the job (ErrTimeout) when it runs longer; zero means no limit.
	Timeout time.Duration
	// Grace is the time between SIGTERM and SIGKILL at teardown; zero means
	// DefaultGrace.
	Grace time.Duration
	// Network is the bootstrap server's network, "tcp" (default) or "unix".
	Network string
	// Signals, if not nil, are forwarded to every running rank's process group.
	Signals <-chan os.Signal
	// Hosts, when set, are the addresses (HOST:PORT) of ptlrun agents, one per
	// node, that start the ranks there (round robin: rank r on Hosts[r mod len]);
	// the bootstrap server then listens on every interface and the ranks reach it
	// at this node's address. Empty: every rank runs here.
	Hosts []string
	// AgentKey is the secret the agents expect (see ServeAgent).
	AgentKey string
}

// RankStatus says how one rank ended.
type RankStatus struct {
	Rank int
	// Pid is the rank's process id (0 if it never started).
	Pid int
	// ExitCode is the exit code, or -1 if the rank was killed by a signal or
	// never started.
	ExitCode int
	// Signal is the signal that killed the rank, or 0.
	Signal syscall.Signal
	// Killed says the launcher's teardown signalled the rank before it ended.
	Killed bool
	// Err is why the rank could not be started, or nil.
	Err error
}

// Success reports whether the rank ran and exited 0.
func (s RankStatus) Success() bool { return s.Err == nil && s.Pid != 0 && s.ExitCode == 0 }

// String describes how the rank ended, e.g. "rank 2 exited with status 3".
func (s RankStatus) String() string {
	switch {
	case s.Err != nil:
		return fmt.Sprintf("rank %d could not start: %v", s.Rank, s.Err)
	case s.Signal != 0:
		return fmt.Sprintf("rank %d (pid %d) killed by signal %d (%v)", s.Rank, s.Pid, int(s.Signal), s.Signal)
	default:
		return fmt.Sprintf("rank %d (pid %d) exited with status %d", s.Rank, s.Pid, s.ExitCode)
	}
}

// exitStatus is the shell-style status of the rank: its code or 128+signal.
func (s RankStatus) exitStatus() int {
	if s.Signal != 0 {
		return 128 + int(s.Signal)
	}
	return s.ExitCode
}

// JobResult is the outcome of a launched job.
type JobResult struct {
	// Ranks holds each rank's status, by rank.
	Ranks []RankStatus
	// ExitCode is the status a launcher should exit with: 0 if every rank
	// succeeded, else the first failing rank's code (128+signal when killed),
	// the code given to Abort (1 if that was 0), ExitTimeout, ExitNotFound or
	// ExitNotExec, or 1 when the context ended.
	ExitCode int
	// OutputErr is the first error writing the ranks' output, or nil.
	OutputErr error
}

// JobError says why a job failed; it matches ErrRankFailed, ErrAborted,
// ErrTimeout, ErrStart or the context's error.
type JobError struct {
	// Rank is the rank that caused the failure, or -1.
	Rank int
	// Err describes it.
	Err error
}

// Error returns the one-line summary.
func (e *JobError) Error() string { return e.Err.Error() }

// Unwrap returns the underlying error.
func (e *JobError) Unwrap() error { return e.Err }

// rankExit is a rank's Wait result, sent to the launcher loop.
type rankExit struct {
	rank int
	ok   bool // the rank was reaped: code and sig are its end
	code int
	sig  syscall.Signal
	err  error
}

// rankProc is a started rank: a local process, or one an agent started.
type rankProc interface {
	// signal sends sig to the rank's process group.
	signal(sig syscall.Signal)
}

// localProc is a rank started here.
type localProc struct{ pid int }

func (p localProc) signal(sig syscall.Signal) { signalGroup(p.pid, sig) }

// Launch runs cfg.N ranks of cfg.Argv with a bootstrap server and waits for them
// all. It returns a nil error when every rank exited 0; otherwise the job was torn
// down (SIGTERM to every rank's process group, SIGKILL after cfg.Grace) at the
// first failure — a rank exiting non-zero or by a signal, an Abort, the timeout,
// or ctx ending — and the error is a *JobError saying which. The result is
// returned whenever the job was started, with every rank's status.
//
// When ranks fail one after another because one of them left the bootstrap
// (its peers' collectives fail with ErrPeerLost), the failure is named after
// the rank that left first, even if a peer was reaped before it; such a rank is
// not sent SIGTERM but given the grace period to exit with its own status.
func Launch(ctx context.Context, cfg LaunchConfig) (*JobResult, error) {
	if err := launchSupported(); err != nil {
		return nil, opErr("launch", -1, "", err)
	}
	if cfg.N < 1 {
		return nil, opErr("launch", -1, "", errDetail(ErrBadRank, "need at least 1 rank, got %d", cfg.N))
	}
	if len(cfg.Argv) == 0 || cfg.Argv[0] == "" {
		return nil, opErr("launch", -1, "", errDetail(ErrStart, "no program to run"))
	}
	if cfg.Grace <= 0 {
		cfg.Grace = DefaultGrace
	}
	network := cfg.Network
	if len(cfg.Hosts) > 0 {
		network = "tcp-public"
	}
	srv, err := NewServer(ServerConfig{Size: cfg.N, Network: network})
	if err != nil {
		return nil, opErr("launch", -1, "", err)
	}
	serveCtx, stopServe := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() { srv.Serve(serveCtx); close(served) }()
	defer func() { stopServe(); <-served }()

	j := &job{cfg: cfg, srv: srv, res: &JobResult{Ranks: make([]RankStatus, cfg.N)}, suspects: map[int]bool{},
		exits: make(chan rankExit, cfg.N),
		out:   &sharedOut{w: orDiscard(cfg.Stdout)}, errOut: &sharedOut{w: orDiscard(cfg.Stderr)}}
	for r := range cfg.N {
		j.res.Ranks[r] = RankStatus{Rank: r, ExitCode: -1}
	}
	j.run(ctx)
	j.res.OutputErr = errors.Join(j.out.err, j.errOut.err)
	if j.failure != nil {
		return j.res, j.failure
	}
	return j.res, nil
}

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

// job is the state of one Launch.
type job struct {
	cfg         LaunchConfig
	srv         *Server
	res         *JobResult
	exits       chan rankExit
	out, errOut *sharedOut
	procs       []rankProc
	agents      []*agentConn
	running     int
	failure     *JobError
	tearing     bool
	failureIdx  int          // failing rank's place in the server's departed list, or -1
	suspects    map[int]bool // departed ranks not yet reaped that may be the failure's cause
}

// fail records the job's first failure and starts the teardown.
func (j *job) fail(rank, code int, err error) {
	if j.failure == nil {
		j.failure = &JobError{Rank: rank, Err: err}
		j.failureIdx = -1
		j.res.ExitCode = code
	}
	j.teardown(syscall.SIGTERM)
}

// teardown signals every running rank's process group, except suspects (ranks
// that left the bootstrap before the failure): they are the likely cause and
// exit by themselves; they get SIGKILL with the others after the grace period.
func (j *job) teardown(sig syscall.Signal) {
	j.tearing = true
	j.signalAll(sig)
}

func (j *job) signalAll(sig syscall.Signal) {
	for r, c := range j.procs {
		if j.tearing && sig == syscall.SIGTERM && j.suspects[r] {
			continue // a rank that already left gets the grace period to exit by itself
		}
		if c != nil && j.res.Ranks[r].Pid != 0 && j.res.Ranks[r].ExitCode == -1 && j.res.Ranks[r].Signal == 0 {
			if j.tearing {
				j.res.Ranks[r].Killed = true
			}
			c.signal(sig)
		}
	}
}

// env builds rank's environment.
func (j *job) env(rank int) []string {
	base := j.cfg.Env
	if base == nil {
		base = os.Environ()
	}
	env := make([]string, 0, len(base)+4)
	for _, kv := range base {
		if !strings.HasPrefix(kv, "PTL_") || !isBootstrapVar(kv) {
			env = append(env, kv)
		}
	}
	return append(env, j.srv.ClientConfig(rank).Env()...)
}

func isBootstrapVar(kv string) bool {
	name, _, _ := strings.Cut(kv, "=")
	return name == EnvRank || name == EnvSize || name == EnvAddr || name == EnvJobKey
}

// start starts every rank; on a start failure it fails the job.
func (j *job) start() {
	if len(j.cfg.Hosts) > 0 {
		j.startRemote()
		return
	}
	path, err := exec.LookPath(j.cfg.Argv[0])
	if err != nil {
		code := ExitNotFound
		if errors.Is(err, os.ErrPermission) {
			code = ExitNotExec
		}
		for r := range j.res.Ranks {
			j.res.Ranks[r].Err = err
		}
		j.fail(0, code, errDetail(ErrStart, "%v", err))
		return
	}
	j.procs = make([]rankProc, j.cfg.N)
	for r := range j.cfg.N {
		c := &exec.Cmd{
			Path:        path,
			Args:        j.cfg.Argv,
			Env:         j.env(r),
			Dir:         j.cfg.Dir,
			SysProcAttr: sysProcAttr(),
			WaitDelay:   j.cfg.Grace,
		}
		so, se := newLineWriter(j.out, r, j.cfg.Prefix), newLineWriter(j.errOut, r, j.cfg.Prefix)
		c.Stdout, c.Stderr = so, se
		if err := c.Start(); err != nil {
			j.res.Ranks[r].Err = err
			for q := r + 1; q < j.cfg.N; q++ {
				j.res.Ranks[q].Err = errors.New("not started: an earlier rank failed to start")
			}
			code := ExitNotExec
			if errors.Is(err, os.ErrNotExist) {
				code = ExitNotFound
			}
			j.srv.RankExited(r, false)
			j.fail(r, code, errDetail(ErrStart, "rank %d: %v", r, err))
			return
		}
		j.procs[r] = localProc{pid: c.Process.Pid}
		j.res.Ranks[r].Pid = c.Process.Pid
		j.running++
		go func() {
			err := c.Wait()
			so.flush()
			se.flush()
			e := rankExit{rank: r, err: err}
			if c.ProcessState != nil {
				e.ok = true
				e.code, e.sig = exitOf(c.ProcessState)
			}
			j.exits <- e
		}()
	}
}

// run starts the ranks and drives the job until every started rank has ended.
func (j *job) run(ctx context.Context) {
	var timeout, grace <-chan time.Time
	if j.cfg.Timeout > 0 {
		t := time.NewTimer(j.cfg.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	var graceTimer *time.Timer
	defer func() {
		if graceTimer != nil {
			graceTimer.Stop()
		}
	}()
	j.start()
	failed := j.srv.Failed()
	done := ctx.Done()
	for j.running > 0 {
		wasTearing := j.tearing
		select {
		case e := <-j.exits:
			j.running--
			j.exited(e)
		case <-timeout:
			timeout = nil
			j.fail(-1, ExitTimeout, errDetail(ErrTimeout, "timeout after %v", j.cfg.Timeout))
		case <-failed:
			failed = nil
			var ae *AbortError
			if errors.As(j.srv.Err(), &ae) {
				code := ae.Code & 0xff
				if code == 0 {
					code = 1
				}
				j.fail(ae.Rank, code, ae)
			}
		case <-done:
			done = nil
			j.fail(-1, 1, ctx.Err())
		case s := <-j.cfg.Signals:
			if sig, ok := toSignal(s); ok {
				j.signalAll(sig)
			}
		case <-grace:
			grace = nil
			j.signalAll(syscall.SIGKILL)
		}
		if j.tearing && !wasTearing {
			graceTimer = time.NewTimer(j.cfg.Grace)
			grace = graceTimer.C
		}
	}
}

// exited records a rank's end and fails the job if the rank failed.
func (j *job) exited(e rankExit) {
	st := &j.res.Ranks[e.rank]
	if !e.ok {
		st.Err = e.err
		j.srv.RankExited(e.rank, false)
		j.fail(e.rank, 1, errDetail(ErrRankFailed, "rank %d: wait: %v", e.rank, e.err))
		return
	}
	st.ExitCode, st.Signal = e.code, e.sig
	if st.Success() {
		st.Killed = false
		delete(j.suspects, e.rank)
		j.srv.RankExited(e.rank, true)
		return
	}
	j.srv.RankExited(e.rank, false)
	delete(j.suspects, e.rank)
	if st.Killed && (st.Signal == syscall.SIGTERM || st.Signal == syscall.SIGKILL) {
		return // ended by the teardown, not a failure of its own
	}
	// A rank often fails only because an earlier one left or died (its
	// collectives see ErrPeerLost), and may be reaped before that one. So the
	// failure is named after the rank that left the bootstrap first among those
	// that failed by themselves; RankExited above listed this rank if needed.
	departed := j.srv.Departed()
	idx := slices.Index(departed, e.rank)
	if j.failure != nil && (j.failureIdx < 0 || idx >= j.failureIdx) {
		return
	}
	first := j.failure == nil
	j.failure = &JobError{Rank: e.rank, Err: errDetail(ErrRankFailed, "%v", st)}
	j.failureIdx = idx
	j.res.ExitCode = st.exitStatus()
	if first {
		// Ranks that left before this one are the likely cause: spare them the
		// SIGTERM so they can exit with their own status within the grace period.
		for _, q := range departed[:max(idx, 0)] {
			if j.res.Ranks[q].Pid != 0 && j.res.Ranks[q].ExitCode == -1 && j.res.Ranks[q].Signal == 0 {
				j.suspects[q] = true
			}
		}
		j.teardown(syscall.SIGTERM)
	}
}
