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
	"strings"
	"testing"
	"time"

	"github.com/goportals/goportals/internal/bootstrap"
	"github.com/goportals/goportals/internal/bootstrap/childtest"
)

// TestStarts: starts(n) is the n-th value of the sequence that next steps
// through from 1.
func TestStarts(t *testing.T) {
	r := uint64(1)
	for n := int64(0); n <= 5000; n++ {
		if got := starts(n); got != r {
			t.Fatalf("starts(%d) = %#x, stepping gives %#x", n, got, r)
		}
		r = next(r)
	}
	if starts(period) != starts(0) || starts(-1) != starts(period-1) {
		t.Error("starts is not periodic with the benchmark's period")
	}
}

// buildExample builds the package's program (with -race when the test runs
// under it) and returns its path.
func buildExample(t *testing.T, name string) string {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("the soft provider (and so the example) needs Linux")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command in PATH to build the example with")
	}
	bin := filepath.Join(t.TempDir(), name)
	build := append(append([]string{"build"}, childtest.BuildFlags()...), "-o", bin, ".")
	if out, err := exec.Command(goTool, build...).CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// runJob runs argv on n PEs and returns the output; it fails t unless every
// PE exited with status 0 and nothing reports a race or panic.
func runJob(t *testing.T, n int, argv ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := bootstrap.Launch(ctx, bootstrap.LaunchConfig{N: n, Argv: argv,
		Env: append(os.Environ(), "GORACE=atexit_sleep_ms=0"), Stdout: &stdout, Stderr: &stderr,
		Timeout: 170 * time.Second})
	out := stdout.String() + stderr.String()
	if err != nil {
		t.Fatalf("%v on %d PEs: %v\n%s", argv, n, err, out)
	}
	for _, st := range res.Ranks {
		if e := childtest.Check(st.String(), st.ExitCode, 0, out); e != nil {
			t.Fatal(e)
		}
	}
	return stdout.String()
}

// TestGUPS runs the benchmark on 1, 2 and 4 PEs and checks its verification
// and its report.
func TestGUPS(t *testing.T) {
	bin := buildExample(t, "gups")
	for _, n := range []int{1, 2, 4} {
		out := runJob(t, n, bin, "-m", "1048576", "-n", "5000")
		if !strings.Contains(out, "verification: 0 errors in 131072 words: PASSED") {
			t.Errorf("%d PEs: no passing verification:\n%s", n, out)
		}
		g := regexp.MustCompile(`(?m)^GUP/s ([0-9.]+)$`).FindStringSubmatch(out)
		if g == nil {
			t.Errorf("%d PEs: no GUP/s line:\n%s", n, out)
		} else if v, err := strconv.ParseFloat(g[1], 64); err != nil || v <= 0 {
			t.Errorf("%d PEs: GUP/s %q is not a positive number", n, g[1])
		}
	}
}

// TestGUPSUsage: bad sizes are refused before the job starts.
func TestGUPSUsage(t *testing.T) {
	var out, errb bytes.Buffer
	for _, args := range [][]string{{"-m", "1000"}, {"-m", "4"}, {"-n", "-1"}} {
		if code := run(args, &out, &errb); code != 2 {
			t.Errorf("%v: status %d, want 2", args, code)
		}
	}
}
