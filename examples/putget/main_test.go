package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/goportals/goportals/internal/bootstrap"
	"github.com/goportals/goportals/internal/bootstrap/childtest"
	"go.uber.org/goleak"
)

// TestDemo builds the demo and runs it as two ranks through the launcher, as the
// README's first command does, and checks that every step verified its data and
// that the measurements are numbers.
func TestDemo(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the soft provider (and so the demo) needs Linux")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command in PATH to build the demo with")
	}
	bin := filepath.Join(t.TempDir(), "putget")
	// Under -race the ranks are built with the race detector too, so that a race in
	// them is reported (and fails the test below).
	build := append(append([]string{"build"}, childtest.BuildFlags()...), "-o", bin, ".")
	if out, err := exec.Command(goTool, build...).CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := bootstrap.Launch(ctx, bootstrap.LaunchConfig{N: 2,
		Argv:   []string{bin, "-iters", "200", "-puts", "20", "-window", "4", "-timeout", "90s"},
		Env:    append(os.Environ(), "GORACE=atexit_sleep_ms=0"),
		Stdout: &stdout, Stderr: &stderr, Timeout: 100 * time.Second})
	if err != nil {
		t.Fatalf("demo failed: %v (result %+v)\nstdout:\n%s\nstderr:\n%s", err, res, stdout.String(), stderr.String())
	}
	for _, st := range res.Ranks {
		if !st.Success() {
			t.Fatalf("%v\nstdout:\n%s\nstderr:\n%s", st, stdout.String(), stderr.String())
		}
	}
	if line := childtest.Trouble(stdout.String() + stderr.String()); line != "" {
		t.Fatalf("a rank reports %q\nstdout:\n%s\nstderr:\n%s", line, stdout.String(), stderr.String())
	}
	out := stdout.String()
	t.Logf("\n%s", out)
	for _, want := range []string{
		`(?m)^wrote 8 B and read it back \(eager.*\): verified byte for byte`,
		`(?m)^wrote 1 MiB and read it back \(long.*\): verified byte for byte`,
		`(?m)^fetch-add uint64 \+5 twice: fetched 100, 105; counter now 110: verified$`,
		`(?m)^compare-and-swap: expecting 7 left 110 alone; expecting 110 swapped in 42: verified$`,
		`(?m)^rank 1 reads its own window after a barrier: the 1 MiB and the counter \(42\) are there: verified$`,
	} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("no line matching %s", want)
		}
	}
	for _, m := range []struct{ re, what string }{
		{`(?m)^latency: 8 B put ping-pong, 200 round trips: one-way ([0-9.]+) us$`, "latency"},
		{`(?m)^latency: 8 B WriteAt \(complete at the target on return\), 200 calls: ([0-9.]+) us each$`, "WriteAt latency"},
		{`(?m)^bandwidth: 20 puts of 1 MiB, 4 in flight per Flush: ([0-9]+) MB/s$`, "bandwidth"},
	} {
		g := regexp.MustCompile(m.re).FindStringSubmatch(out)
		if g == nil {
			t.Errorf("no %s line matching %s", m.what, m.re)
			continue
		}
		if v, err := strconv.ParseFloat(g[1], 64); err != nil || v <= 0 {
			t.Errorf("%s %q is not a positive number", m.what, g[1])
		}
	}
	if stderr.Len() != 0 {
		t.Errorf("stderr:\n%s", stderr.String())
	}
}

// TestDemoAlone: a lone process (no launcher) is told to start two ranks.
func TestDemoAlone(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the soft provider (and so the demo) needs Linux")
	}
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	for _, k := range []string{bootstrap.EnvAddr, bootstrap.EnvRank, bootstrap.EnvSize, bootstrap.EnvJobKey} {
		t.Setenv(k, "") // restored after the test
		os.Unsetenv(k)
	}
	err := run(options{iters: 1, puts: 1, window: 1, timeout: 30 * time.Second})
	if err == nil || !regexp.MustCompile(`two ranks`).MatchString(err.Error()) {
		t.Fatalf("alone: %v", err)
	}
}
