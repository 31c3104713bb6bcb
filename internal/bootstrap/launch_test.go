package bootstrap

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
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
			if err != nil {
				t.Fatalf("Launch: %v\nstderr:\n%s", err, errOut)
			}
			if res.ExitCode != 0 || res.OutputErr != nil {
				t.Fatalf("exit %d, output error %v", res.ExitCode, res.OutputErr)
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
	cfg, _, errOut := helperConfig(4, "fail")
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
			t.Errorf("rank %d ended %v, want ErrPeerLost exit or teardown signal", st.Rank, st)
		}
	}
}

func TestLaunchNamesTheRankThatLeftFirst(t *testing.T) {
	requireLaunch(t)
	for range 3 {
		cfg, _, errOut := helperConfig(4, "fail-after-close")
		res, err := Launch(t.Context(), cfg)
		var je *JobError
		if !errors.As(err, &je) || je.Rank != 1 || res.ExitCode != 3 {
			t.Fatalf("Launch: %v, exit %d; want rank 1 with status 3\nstderr:\n%s", err, res.ExitCode, errOut)
		}
	}
}

func TestLaunchAbort(t *testing.T) {
	requireLaunch(t)
	cfg, _, errOut := helperConfig(3, "abort")
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
}

func TestLaunchTimeoutKillsHangingJob(t *testing.T) {
	requireLaunch(t)
	cfg, out, _ := helperConfig(2, "hang")
	cfg.Timeout = 300 * time.Millisecond
	cfg.Grace = 200 * time.Millisecond
	res, err := Launch(t.Context(), cfg)
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("Launch: %v, want ErrTimeout", err)
	}
	if res.ExitCode != ExitTimeout {
		t.Errorf("exit code %d", res.ExitCode)
	}
	// Rank 0 ignores SIGTERM, so SIGKILL after the grace period ends it.
	if st := res.Ranks[0]; st.Signal != syscall.SIGKILL || !st.Killed {
		t.Errorf("rank 0: %v, want killed by SIGKILL", st)
	}
	if st := res.Ranks[1]; st.Signal != syscall.SIGTERM || !st.Killed {
		t.Errorf("rank 1: %v, want killed by SIGTERM", st)
	}
	_ = out
}

func TestLaunchContextCancel(t *testing.T) {
	requireLaunch(t)
	cfg, _, _ := helperConfig(2, "hang")
	cfg.Grace = 100 * time.Millisecond
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	res, err := Launch(ctx, cfg)
	if !errors.Is(err, ctx.Err()) || ctx.Err() == nil {
		t.Fatalf("Launch: %v", err)
	}
	if res.ExitCode != 1 {
		t.Errorf("exit code %d", res.ExitCode)
	}
}

func TestLaunchForwardsSignals(t *testing.T) {
	requireLaunch(t)
	cfg, _, _ := helperConfig(2, "signal")
	sigs := make(chan os.Signal, 1)
	cfg.Signals = sigs
	cfg.Timeout = time.Minute
	go func() {
		time.Sleep(300 * time.Millisecond)
		sigs <- syscall.SIGINT
	}()
	res, err := Launch(t.Context(), cfg)
	if !errors.Is(err, ErrRankFailed) {
		t.Fatalf("Launch: %v", err)
	}
	if res.ExitCode != 128+int(syscall.SIGINT) {
		t.Errorf("exit code %d, want %d", res.ExitCode, 128+int(syscall.SIGINT))
	}
}

func TestLaunchPrefixedOutput(t *testing.T) {
	requireLaunch(t)
	cfg, out, errOut := helperConfig(3, "print")
	cfg.Prefix = true
	if _, err := Launch(t.Context(), cfg); err != nil {
		t.Fatalf("Launch: %v", err)
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
