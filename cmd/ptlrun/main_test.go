package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/goportals/goportals/internal/bootstrap"
	"github.com/goportals/goportals/internal/bootstrap/childtest"
	"go.uber.org/goleak"
)

// helperEnv switches the test binary into a rank program started by ptlrun.
const helperEnv = "PTLRUN_TEST_HELPER"

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(helper(mode))
	}
	goleak.VerifyTestMain(m)
}

// helper is the rank program: it uses the bootstrap the way an application does.
func helper(mode string) int {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, err := bootstrap.Open(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, "open:", err)
		return 10
	}
	defer b.Close()
	r, n := b.Rank(), b.Size()
	switch mode {
	case "hello":
		if err := b.Put("name", []byte(fmt.Sprintf("r%d", r))); err != nil {
			return 11
		}
		if err := b.Fence(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "fence:", err)
			return 11
		}
		v, err := b.Get(ctx, (r+1)%n, "name")
		if err != nil {
			fmt.Fprintln(os.Stderr, "get:", err)
			return 12
		}
		fmt.Printf("hello from %d of %d, next is %s\n", r, n, v)
	case "fail":
		if r == 1 {
			fmt.Fprintln(os.Stderr, "rank 1 fails on purpose")
			return 7
		}
		if err := b.Barrier(ctx); err != nil {
			return 42
		}
	case "wait":
		fmt.Println("ready")
		time.Sleep(time.Minute) // ptlrun's teardown or a forwarded signal ends it
	case "exit1", "panic", "race":
		// Rank 1 misbehaves, for the check of the harness.
		if r == 1 {
			switch mode {
			case "exit1":
				fmt.Fprintln(os.Stderr, "rank 1 fails on purpose")
				return 1
			case "panic":
				panic("rank 1 panics on purpose")
			case "race":
				race()
			}
		}
	default:
		fmt.Fprintln(os.Stderr, "unknown helper mode", mode)
		return 2
	}
	return 0
}

// raced is written by two goroutines with no ordering between them.
var raced int

// race makes a data race that the race detector reports every time.
func race() {
	done := make(chan struct{})
	go func() {
		raced = 1
		close(done)
	}()
	raced = 2
	<-done
}

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

// self is the command line that runs this test binary as a rank helper.
func self() []string { return []string{os.Args[0], "-test.run=^$"} }

// setHelper makes the ranks (which inherit the environment) run helper mode.
func setHelper(t *testing.T, mode string) {
	t.Setenv(helperEnv, mode)
	t.Setenv("GORACE", "atexit_sleep_ms=0")
}

func TestRunUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"-h"}, 0, "usage: ptlrun -np N"},
		{[]string{"true"}, exitUsage, "-np N with N ≥ 1 is required"},
		{[]string{"-np", "2"}, exitUsage, "no program given"},
		{[]string{"-np", "x", "true"}, exitUsage, "invalid value"},
		{[]string{"-np", "1", "-timeout", "-1s", "true"}, exitUsage, "must not be negative"},
		{[]string{"-np", "2", "/nonexistent/prog"}, 127, "cannot start rank"},
	} {
		var out, errOut syncBuffer
		code := run(t.Context(), tc.args, &out, &errOut, nil)
		if code != tc.code || !strings.Contains(errOut.String(), tc.want) {
			t.Errorf("ptlrun %q: status %d, stderr %q; want %d and %q", tc.args, code, errOut.String(), tc.code, tc.want)
		}
	}
}

func TestRunPrefixed(t *testing.T) {
	requireLinux(t)
	setHelper(t, "hello")
	var out, errOut syncBuffer
	code := run(t.Context(), append([]string{"-np", "3", "-prefix"}, self()...), &out, &errOut, nil)
	if err := childtest.Check("ptlrun -np 3 -prefix", code, 0, out.String(), errOut.String()); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	sort.Strings(lines)
	want := []string{
		"[0] hello from 0 of 3, next is r1",
		"[1] hello from 1 of 3, next is r2",
		"[2] hello from 2 of 3, next is r0",
	}
	if fmt.Sprint(lines) != fmt.Sprint(want) {
		t.Fatalf("output %q, want %q", lines, want)
	}
}

func TestRunFailureStatus(t *testing.T) {
	requireLinux(t)
	setHelper(t, "fail")
	var out, errOut syncBuffer
	code := run(t.Context(), append([]string{"-np", "3", "-unix"}, self()...), &out, &errOut, nil)
	if err := childtest.Check("ptlrun of a failing rank", code, 7, out.String(), errOut.String()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(errOut.String(), "ptlrun: bootstrap: rank failed: rank 1") {
		t.Errorf("no summary naming rank 1 in stderr:\n%s", errOut.String())
	}
}

func TestRunTimeout(t *testing.T) {
	requireLinux(t)
	setHelper(t, "wait")
	var out, errOut syncBuffer
	code := run(t.Context(), append([]string{"-np", "2", "-timeout", "200ms", "-grace", "100ms"}, self()...), &out, &errOut, nil)
	if err := childtest.Check("ptlrun -timeout 200ms", code, bootstrap.ExitTimeout, out.String(), errOut.String()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(errOut.String(), "timeout after 200ms") {
		t.Fatalf("no timeout summary in stderr %q", errOut.String())
	}
}

// The checks above fail a run whose rank exits non-zero, panics or races, quoting
// the ranks' output: ptlrun passes on the status and the output.
func TestRunBadRanksFailTheCheck(t *testing.T) {
	requireLinux(t)
	for _, tc := range []struct {
		mode     string
		want     string
		needRace bool
	}{
		{mode: "exit1", want: "rank 1 fails on purpose"},
		{mode: "panic", want: `reports "[1] panic: rank 1 panics on purpose"`},
		{mode: "race", want: `reports "[1] WARNING: DATA RACE"`, needRace: true},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			if tc.needRace && !childtest.RaceEnabled {
				t.Skip("a race is reported only under the race detector (go test -race)")
			}
			setHelper(t, tc.mode)
			var out, errOut syncBuffer
			code := run(t.Context(), append([]string{"-np", "2", "-prefix"}, self()...), &out, &errOut, nil)
			err := childtest.Check("ptlrun "+tc.mode, code, 0, out.String(), errOut.String())
			if err == nil {
				t.Fatalf("a run with a bad rank passed the check: status %d, stderr:\n%s", code, errOut.String())
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("check's error lacks %q:\n%v", tc.want, err)
			}
		})
	}
}

// buildPtlrun builds the command into a temporary directory.
func buildPtlrun(t *testing.T) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(os.Getenv("GOROOT"), "bin", "go")
		if _, err := os.Stat(goTool); err != nil {
			t.Skip("no go tool to build cmd/ptlrun with: " + err.Error())
		}
	}
	bin := filepath.Join(t.TempDir(), "ptlrun")
	// Under -race the launcher is built with the race detector too.
	cmd := exec.Command(goTool, append(append([]string{"build"}, childtest.BuildFlags()...), "-o", bin, ".")...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func TestEndToEnd(t *testing.T) {
	requireLinux(t)
	bin := buildPtlrun(t)
	t.Setenv("GORACE", "atexit_sleep_ms=0")
	// runBin runs ptlrun with args and the helper in mode, and fails the test
	// unless it exits with want and its output (ptlrun's and the ranks') is free of
	// races, panics and fatal runtime errors.
	runBin := func(mode string, want int, args ...string) (string, string) {
		t.Helper()
		cmd := exec.Command(bin, append(args, self()...)...)
		cmd.Env = append(os.Environ(), helperEnv+"="+mode)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatalf("run ptlrun: %v", err)
		}
		what := fmt.Sprintf("ptlrun %s (helper %s)", strings.Join(args, " "), mode)
		if err := childtest.Check(what, cmd.ProcessState.ExitCode(), want, out.String(), errOut.String()); err != nil {
			t.Error(err)
		}
		return out.String(), errOut.String()
	}

	out, _ := runBin("hello", 0, "-np", "4", "-prefix")
	for r := range 4 {
		want := fmt.Sprintf("[%d] hello from %d of 4, next is r%d\n", r, r, (r+1)%4)
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	out, _ = runBin("hello", 0, "-np", "2")
	if !strings.Contains(out, "hello from 1 of 2, next is r0\n") || strings.Contains(out, "[1]") {
		t.Errorf("unprefixed: output %q", out)
	}

	_, errOut := runBin("fail", 7, "-np", "3", "-prefix")
	if !strings.Contains(errOut, "[1] rank 1 fails on purpose\n") || !strings.Contains(errOut, "rank 1 (pid") {
		t.Errorf("fail: stderr lacks the prefixed line or the summary:\n%s", errOut)
	}
}

func TestEndToEndForwardsSIGINT(t *testing.T) {
	requireLinux(t)
	bin := buildPtlrun(t)
	cmd := exec.Command(bin, append([]string{"-np", "2"}, self()...)...)
	cmd.Env = append(os.Environ(), helperEnv+"=wait", "GORACE=atexit_sleep_ms=0")
	var errOut syncBuffer
	cmd.Stderr = &errOut
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// A run that never gets ready is killed, which ends the read below.
	watchdog := time.AfterFunc(time.Minute, func() { cmd.Process.Kill() })
	defer watchdog.Stop()
	// Wait until both ranks run, then interrupt ptlrun as a terminal would.
	buf := make([]byte, 64)
	got := ""
	for strings.Count(got, "ready") < 2 {
		n, err := stdout.Read(buf)
		if err != nil {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("reading ranks' output: %v (got %q); stderr:\n%s", err, got, errOut.String())
		}
		got += string(buf[:n])
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	rest, err := io.ReadAll(stdout)
	if err != nil {
		t.Errorf("reading the rest of the output: %v", err)
	}
	waitErr := cmd.Wait()
	if !watchdog.Stop() {
		t.Fatalf("ptlrun did not end within a minute of starting; stderr:\n%s", errOut.String())
	}
	code := cmd.ProcessState.ExitCode()
	if err := childtest.Check("ptlrun interrupted", code, 128+int(syscall.SIGINT), got+string(rest), errOut.String()); err != nil {
		t.Fatalf("%v (wait: %v)", err, waitErr)
	}
}

// requireLinux skips tests that start ranks: the launcher needs Linux process groups.
func requireLinux(t *testing.T) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("ptlrun launches ranks only on Linux (process groups), not on " + runtime.GOOS)
	}
}
