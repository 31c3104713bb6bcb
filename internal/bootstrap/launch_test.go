package bootstrap

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/goportals/goportals/internal/bootstrap/childtest"
)

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// watchWriter is a syncBuffer that closes seen once its text holds want count times.
type watchWriter struct {
	syncBuffer
	want  string
	count int
	once  sync.Once
	seen  chan struct{}
}

func newWatchWriter(want string, count int) *watchWriter {
	return &watchWriter{want: want, count: count, seen: make(chan struct{})}
}

func (w *watchWriter) Write(p []byte) (int, error) {
	n, err := w.syncBuffer.Write(p)
	if strings.Count(w.String(), w.want) >= w.count {
		w.once.Do(func() { close(w.seen) })
	}
	return n, err
}

// jobTrouble returns why a job that should have succeeded did not: Launch failed, a
// rank did not exit 0, or the ranks' output reports a data race, a panic or a fatal
// runtime error. The error quotes the output.
func jobTrouble(res *JobResult, err error, stdout, stderr string) error {
	var why []string
	if err != nil {
		why = append(why, fmt.Sprintf("Launch: %v", err))
	}
	if res != nil {
		for _, st := range res.Ranks {
			if !st.Success() || st.Killed {
				s := st.String()
				if st.ExitCode == childtest.RaceExitCode && childtest.RaceEnabled {
					s += " (the race detector's status)"
				}
				why = append(why, s)
			}
		}
		if res.ExitCode != 0 || res.OutputErr != nil {
			why = append(why, fmt.Sprintf("job exit code %d, output error %v", res.ExitCode, res.OutputErr))
		}
	}
	if line := childtest.Trouble(stdout + stderr); line != "" {
		why = append(why, fmt.Sprintf("output reports %q", line))
	}
	if len(why) == 0 {
		return nil
	}
	return fmt.Errorf("job failed: %s\nstdout:\n%s\nstderr:\n%s", strings.Join(why, "; "),
		childtest.Quote(stdout), childtest.Quote(stderr))
}

// noTrouble fails the test if the ranks of a job that was meant to fail report a
// data race, a panic or a fatal runtime error: their exit status alone does not
// show that.
func noTrouble(t *testing.T, outs ...*syncBuffer) {
	t.Helper()
	for _, o := range outs {
		if line := childtest.Trouble(o.String()); line != "" {
			t.Errorf("a rank reports %q; output:\n%s", line, childtest.Quote(o.String()))
		}
	}
}

// helperConfig launches n ranks of this test binary in helper mode.
func helperConfig(n int, mode string) (LaunchConfig, *syncBuffer, *syncBuffer) {
	var out, errOut syncBuffer
	return LaunchConfig{
		N:      n,
		Argv:   []string{os.Args[0], "-test.run=^$"},
		Env:    append(os.Environ(), helperEnv+"="+mode, "GORACE=atexit_sleep_ms=0"),
		Stdout: &out,
		Stderr: &errOut,
		Grace:  500 * time.Millisecond,
	}, &out, &errOut
}

func TestLaunchKV(t *testing.T) {
	requireLaunch(t)
	for _, network := range []string{"tcp", "unix"} {
		t.Run(network, func(t *testing.T) {
			cfg, out, errOut := helperConfig(4, "kv")
			cfg.Network = network
			// Stale bootstrap variables in the given environment are replaced.
			cfg.Env = append(cfg.Env, EnvRank+"=99", EnvJobKey+"=stale")
			res, err := Launch(t.Context(), cfg)
			if err := jobTrouble(res, err, out.String(), errOut.String()); err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSpace(out.String()), "\n")
			sort.Strings(lines)
			want := []string{"rank 0 of 4 ok", "rank 1 of 4 ok", "rank 2 of 4 ok", "rank 3 of 4 ok"}
			if fmt.Sprint(lines) != fmt.Sprint(want) {
				t.Fatalf("output %q, want %q", lines, want)
			}
			for _, st := range res.Ranks {
				if !st.Success() || st.Killed || st.Pid == 0 {
					t.Errorf("rank status %+v", st)
				}
			}
		})
	}
}

func TestLaunchRankFailureTearsDown(t *testing.T) {
	requireLaunch(t)
	cfg, out, errOut := helperConfig(4, "fail")
	res, err := Launch(t.Context(), cfg)
	var je *JobError
	if !errors.Is(err, ErrRankFailed) || !errors.As(err, &je) || je.Rank != 1 {
		t.Fatalf("Launch: %v, want rank 1 failed\nstderr:\n%s", err, errOut)
	}
	if res.ExitCode != 3 {
		t.Errorf("exit code %d, want 3", res.ExitCode)
	}
	if !strings.Contains(err.Error(), "rank 1") || !strings.Contains(err.Error(), "status 3") {
		t.Errorf("summary %q", err)
	}
	for _, st := range res.Ranks {
		if st.Rank == 1 {
			continue
		}
		// The others were blocked in Barrier: they saw ErrPeerLost or were killed.
		if !(st.ExitCode == exitPeerLost || st.Signal == syscall.SIGTERM || st.Signal == syscall.SIGKILL) {
			t.Errorf("rank %d ended %v, want ErrPeerLost exit or teardown signal\nstderr:\n%s", st.Rank, st, errOut)
		}
	}
	noTrouble(t, out, errOut)
}

func TestLaunchNamesTheRankThatLeftFirst(t *testing.T) {
	requireLaunch(t)
	for range 3 {
		cfg, out, errOut := helperConfig(4, "fail-after-close")
		// Rank 1 is spared the teardown's SIGTERM for the grace period, to exit with
		// its own status; a short grace would let a slow machine SIGKILL it first.
		// The job still ends as soon as every rank has exited.
		cfg.Grace = 30 * time.Second
		res, err := Launch(t.Context(), cfg)
		var je *JobError
		if !errors.As(err, &je) || je.Rank != 1 || res.ExitCode != 3 {
			t.Fatalf("Launch: %v, exit %d; want rank 1 with status 3\nstderr:\n%s", err, res.ExitCode, errOut)
		}
		noTrouble(t, out, errOut)
	}
}

func TestLaunchAbort(t *testing.T) {
	requireLaunch(t)
	cfg, out, errOut := helperConfig(3, "abort")
	res, err := Launch(t.Context(), cfg)
	var ae *AbortError
	if !errors.Is(err, ErrAborted) || !errors.As(err, &ae) || ae.Rank != 2 || ae.Msg != "helper gives up" {
		t.Fatalf("Launch: %v, want abort by rank 2\nstderr:\n%s", err, errOut)
	}
	if res.ExitCode != 5 {
		t.Errorf("exit code %d, want 5", res.ExitCode)
	}
	if st := res.Ranks[2]; !st.Killed {
		t.Errorf("aborting rank not torn down: %v", st)
	}
	for _, st := range res.Ranks[:2] {
		// The others were blocked in Barrier: they saw ErrAborted or were killed.
		if !(st.ExitCode == exitPeerLost || st.Signal == syscall.SIGTERM || st.Signal == syscall.SIGKILL) {
			t.Errorf("rank %d ended %v, want ErrAborted exit or teardown signal\nstderr:\n%s", st.Rank, st, errOut)
		}
	}
	noTrouble(t, out, errOut)
}

func TestLaunchTimeoutKillsHangingJob(t *testing.T) {
	requireLaunch(t)
	// Rank 0 ignores SIGTERM only once it runs its helper: a timeout that strikes
	// before both ranks said "hanging" proves nothing about the SIGKILL path, so
	// the job runs again with a longer timeout.
	for timeout := 300 * time.Millisecond; ; timeout *= 2 {
		cfg, out, errOut := helperConfig(2, "hang")
		cfg.Prefix = true
		cfg.Timeout = timeout
		cfg.Grace = 200 * time.Millisecond
		res, err := Launch(t.Context(), cfg)
		if !errors.Is(err, ErrTimeout) {
			t.Fatalf("Launch: %v, want ErrTimeout\nstderr:\n%s", err, errOut)
		}
		if res.ExitCode != ExitTimeout {
			t.Errorf("exit code %d", res.ExitCode)
		}
		noTrouble(t, out, errOut)
		if !strings.Contains(out.String(), "[0] hanging\n") || !strings.Contains(out.String(), "[1] hanging\n") {
			if timeout >= 5*time.Second {
				t.Fatalf("the ranks did not start hanging within %v; stdout:\n%s\nstderr:\n%s", timeout, out, errOut)
			}
			t.Logf("the ranks were not all ready within %v; again with a longer timeout", timeout)
			continue
		}
		// Rank 0 ignores SIGTERM, so SIGKILL after the grace period ends it.
		if st := res.Ranks[0]; st.Signal != syscall.SIGKILL || !st.Killed {
			t.Errorf("rank 0: %v, want killed by SIGKILL", st)
		}
		if st := res.Ranks[1]; st.Signal != syscall.SIGTERM || !st.Killed {
			t.Errorf("rank 1: %v, want killed by SIGTERM", st)
		}
		return
	}
}

func TestLaunchContextCancel(t *testing.T) {
	requireLaunch(t)
	cfg, out, errOut := helperConfig(2, "hang")
	cfg.Grace = 100 * time.Millisecond
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	res, err := Launch(ctx, cfg)
	if !errors.Is(err, ctx.Err()) || ctx.Err() == nil {
		t.Fatalf("Launch: %v\nstderr:\n%s", err, errOut)
	}
	if res.ExitCode != 1 {
		t.Errorf("exit code %d", res.ExitCode)
	}
	for _, st := range res.Ranks {
		if !st.Killed || st.Signal == 0 {
			t.Errorf("rank %d not torn down: %v", st.Rank, st)
		}
	}
	noTrouble(t, out, errOut)
}

func TestLaunchForwardsSignals(t *testing.T) {
	requireLaunch(t)
	// A test run as a background job of a non-interactive shell starts with SIGINT
	// ignored, and ranks would inherit that; exec resets only a caught signal to its
	// default. Catching SIGINT here makes the ranks die of it wherever the test runs.
	caught := make(chan os.Signal, 1)
	signal.Notify(caught, syscall.SIGINT)
	defer signal.Stop(caught)
	cfg, _, errOut := helperConfig(2, "signal")
	out := newWatchWriter("ready\n", 2)
	cfg.Stdout = out
	sigs := make(chan os.Signal, 1)
	cfg.Signals = sigs
	cfg.Timeout = time.Minute
	// Interrupt once both ranks run their helper, as a terminal's ^C would.
	launched, notReady, stopped := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		select {
		case <-out.seen:
			sigs <- syscall.SIGINT
		case <-launched: // the job ended by itself
		case <-time.After(30 * time.Second):
			close(notReady)
			sigs <- syscall.SIGKILL
		}
	}()
	res, err := Launch(t.Context(), cfg)
	close(launched)
	<-stopped
	select {
	case <-notReady:
		t.Fatalf("the ranks did not both get ready in 30s; stdout:\n%s\nstderr:\n%s", out, errOut)
	default:
	}
	if !errors.Is(err, ErrRankFailed) {
		t.Fatalf("Launch: %v\nstderr:\n%s", err, errOut)
	}
	if res.ExitCode != 128+int(syscall.SIGINT) {
		t.Errorf("exit code %d, want %d", res.ExitCode, 128+int(syscall.SIGINT))
	}
	for _, st := range res.Ranks {
		if st.Signal != syscall.SIGINT && !st.Killed {
			t.Errorf("rank %d: %v, want killed by the forwarded SIGINT (or torn down)", st.Rank, st)
		}
	}
	noTrouble(t, &out.syncBuffer, errOut)
}

func TestLaunchPrefixedOutput(t *testing.T) {
	requireLaunch(t)
	cfg, out, errOut := helperConfig(3, "print")
	cfg.Prefix = true
	res, err := Launch(t.Context(), cfg)
	if err := jobTrouble(res, err, out.String(), errOut.String()); err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{"stdout": out.String(), "stderr": errOut.String()} {
		if !strings.HasSuffix(text, "\n") {
			t.Errorf("%s does not end with a newline", name)
		}
		counts := map[string]int{}
		for _, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
			var r int
			if _, err := fmt.Sscanf(line, "[%d]", &r); err != nil {
				t.Fatalf("%s line %q has no rank prefix", name, line)
			}
			rest := strings.TrimPrefix(line, fmt.Sprintf("[%d] ", r))
			var i, rr int
			switch {
			case name == "stdout" && rest == fmt.Sprintf("tail of rank %d", r):
			case name == "stdout":
				if _, err := fmt.Sscanf(rest, "line %d of rank %d", &i, &rr); err != nil || rr != r {
					t.Fatalf("mixed line %q", line)
				}
			default:
				if _, err := fmt.Sscanf(rest, "err %d of rank %d", &i, &rr); err != nil || rr != r {
					t.Fatalf("mixed line %q", line)
				}
			}
			counts[fmt.Sprint(r)]++
		}
		for r := range 3 {
			want := 50
			if name == "stdout" {
				want = 51
			}
			if counts[fmt.Sprint(r)] != want {
				t.Errorf("%s: rank %d has %d lines, want %d", name, r, counts[fmt.Sprint(r)], want)
			}
		}
	}
}

// The check of a job that should succeed fails it when a rank exits non-zero,
// panics or races, and quotes the ranks' output.
func TestJobTroubleCatchesBadRanks(t *testing.T) {
	requireLaunch(t)
	for _, tc := range []struct {
		mode     string
		want     []string // in the error
		needRace bool
	}{
		{mode: "kv"},
		{mode: "exit1", want: []string{"rank 1 (pid", "exited with status 1", "rank 1 fails on purpose"}},
		{mode: "panic", want: []string{`output reports "panic: rank 1 panics on purpose"`, "exited with status 2"}},
		{mode: "race", needRace: true, want: []string{`output reports "WARNING: DATA RACE"`, "exited with status 66"}},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			if tc.needRace && !childtest.RaceEnabled {
				t.Skip("a race is reported only under the race detector (go test -race)")
			}
			cfg, out, errOut := helperConfig(2, tc.mode)
			res, err := Launch(t.Context(), cfg)
			trouble := jobTrouble(res, err, out.String(), errOut.String())
			if tc.want == nil {
				if trouble != nil {
					t.Fatalf("a clean job was judged failed: %v", trouble)
				}
				return
			}
			if trouble == nil {
				t.Fatalf("job %s passed the check: %v %+v\nstderr:\n%s", tc.mode, err, res, errOut)
			}
			for _, w := range tc.want {
				if !strings.Contains(trouble.Error(), w) {
					t.Errorf("check's error lacks %q:\n%v", w, trouble)
				}
			}
		})
	}
}

func TestLaunchBadProgram(t *testing.T) {
	requireLaunch(t)
	res, err := Launch(t.Context(), LaunchConfig{N: 2, Argv: []string{"/nonexistent/prog"}})
	if !errors.Is(err, ErrStart) || res.ExitCode != ExitNotFound {
		t.Fatalf("Launch: %v, exit %v", err, res)
	}
	if _, err := Launch(t.Context(), LaunchConfig{N: 0, Argv: []string{"true"}}); !errors.Is(err, ErrBadRank) {
		t.Fatalf("N=0: %v", err)
	}
	if _, err := Launch(t.Context(), LaunchConfig{N: 1}); !errors.Is(err, ErrStart) {
		t.Fatalf("no argv: %v", err)
	}
}

func TestLineWriter(t *testing.T) {
	var b bytes.Buffer
	out := &sharedOut{w: &b}
	l := newLineWriter(out, 7, true)
	l.Write([]byte("ab"))
	l.Write([]byte("c\nde\n\nf"))
	if got := b.String(); got != "[7] abc\n[7] de\n[7] \n" {
		t.Fatalf("got %q", got)
	}
	l.flush()
	if got := b.String(); !strings.HasSuffix(got, "[7] f\n") {
		t.Fatalf("flush: %q", got)
	}
	b.Reset()
	long := bytes.Repeat([]byte("x"), maxLine+10)
	l.Write(long)
	l.flush()
	if got := b.String(); got != "[7] "+string(long[:maxLine])+"\n[7] xxxxxxxxxx\n" {
		t.Fatalf("long line split wrong: %d bytes", len(got))
	}
	// Without prefix the bytes pass unchanged.
	b.Reset()
	p := newLineWriter(out, 0, false)
	p.Write([]byte("a\nb"))
	p.flush()
	if b.String() != "a\nb" {
		t.Fatalf("unprefixed: %q", b.String())
	}
}

// requireLaunch skips a test that starts processes where Launch cannot run.
func requireLaunch(t *testing.T) {
	t.Helper()
	if err := launchSupported(); err != nil {
		t.Skip("Launch is not available on this platform: " + err.Error())
	}
}
