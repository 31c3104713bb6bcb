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
)

// TestUsage: bad flags are refused with status 2 before the job starts.
func TestUsage(t *testing.T) {
	var out, errb bytes.Buffer
	for _, args := range [][]string{{"-iters", "0"}, {"-size", "-1"}, {"-gups-m", "1000"}, {"-gups-n", "-2"}, {"-window", "0"}, {"-windows", "-1"}, {"-nosuch"}} {
		if code := run(args, &out, &errb); code != 2 {
			t.Errorf("%v: status %d, want 2", args, code)
		}
	}
}

// TestBench runs a short benchmark on 2 PEs and checks that every line
// reports a positive number.
func TestBench(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the soft provider (and so the benchmark) needs Linux")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command in PATH to build the benchmark with")
	}
	bin := filepath.Join(t.TempDir(), "shmembench")
	build := append(append([]string{"build"}, childtest.BuildFlags()...), "-o", bin, ".")
	if out, err := exec.Command(goTool, build...).CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := bootstrap.Launch(ctx, bootstrap.LaunchConfig{N: 2,
		Argv: []string{bin, "-iters", "50", "-bw-iters", "5", "-size", "65536", "-window", "4", "-windows", "3", "-gups-m", "65536", "-gups-n", "500", "-cpu"},
		Env:  append(os.Environ(), "GORACE=atexit_sleep_ms=0"), Stdout: &stdout, Stderr: &stderr,
		Timeout: 110 * time.Second})
	out := stdout.String() + stderr.String()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, st := range res.Ranks {
		if e := childtest.Check(st.String(), st.ExitCode, 0, out); e != nil {
			t.Fatal(e)
		}
	}
	for _, re := range []string{
		`(?m)^put 8 B \+ quiet +([0-9.]+) us  cpu +[0-9.]+ us$`,
		`(?m)^fetch-add 64-bit +([0-9.]+) us  cpu +[0-9.]+ us$`,
		`(?m)^barrier_all \(2 PEs\) +([0-9.]+) us  cpu +[0-9.]+ us$`,
		`(?m)^put 65536 B \+ quiet +([0-9.]+) us +[0-9.]+ GB/s  cpu +[0-9.]+ us +[0-9.]+ GB/s$`,
		`(?m)^put 65536 B x4 \+ quiet +([0-9.]+) us +[0-9.]+ GB/s  cpu +[0-9.]+ us +[0-9.]+ GB/s$`,
		// -cpu: the CPU time of a windowed put (positive: the copies take some)
		`(?m)^put 65536 B x4 \+ quiet +[0-9.]+ us +[0-9.]+ GB/s  cpu +([0-9.]+) us`,
		`(?m)^random access \(GUPS\) +([0-9.]+) GUP/s .*, verified\)$`,
	} {
		g := regexp.MustCompile(re).FindStringSubmatch(stdout.String())
		if g == nil {
			t.Errorf("no line matching %s in:\n%s", re, out)
			continue
		}
		if v, err := strconv.ParseFloat(g[1], 64); err != nil || v <= 0 {
			t.Errorf("%s: %q is not a positive number", re, g[1])
		}
	}
}
