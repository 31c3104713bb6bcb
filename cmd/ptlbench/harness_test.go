package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/goportals/goportals/internal/bootstrap/childtest"
)

// The transfer tests start their ranks as children of the test binary (the
// launcher re-executes it), and the launcher passes the ranks' standard error to
// os.Stderr. A run passes only when ptlbench exits with the status the test wants
// and neither its output nor the ranks' reports a data race, a panic or a fatal
// runtime error: a rank that races and then fails keeps its own status, and a
// panicking rank gives the same status as a rank that ran out of time.

// benchRun is one in-process run of ptlbench.
type benchRun struct {
	args           []string
	rc             int
	stdout, stderr string // ptlbench's (and the ranks' standard output)
	ranks          string // the ranks' standard error
}

// runBench runs ptlbench with args in this process, capturing the ranks'
// standard error by pointing os.Stderr at a pipe for the run. The tests that call
// it do not run in parallel.
func runBench(t *testing.T, args ...string) benchRun {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	var ranks bytes.Buffer
	copied := make(chan struct{})
	go func() {
		io.Copy(&ranks, r)
		close(copied)
	}()
	var out, errb bytes.Buffer
	saved := os.Stderr
	os.Stderr = w
	rc := func() int {
		defer func() { os.Stderr = saved }()
		return run(args, &out, &errb)
	}()
	w.Close()
	<-copied
	r.Close()
	return benchRun{args: args, rc: rc, stdout: out.String(), stderr: errb.String(), ranks: ranks.String()}
}

// check returns nil if the run exited with status want and no output reports a
// race, a panic or a fatal error; otherwise an error with all the output.
func (b benchRun) check(want int) error {
	return childtest.Check("ptlbench "+strings.Join(b.args, " "), b.rc, want,
		"stdout:\n", b.stdout, "\nstderr:\n", b.stderr, "\nranks' stderr:\n", b.ranks)
}

// mustRun runs ptlbench with args and fails the test unless check(want) passes.
func mustRun(t *testing.T, want int, args ...string) benchRun {
	t.Helper()
	b := runBench(t, args...)
	if err := b.check(want); err != nil {
		t.Fatal(err)
	}
	return b
}

// Transfer tests that exist only in the test binary, whose ranks misbehave on
// purpose to test the check: every rank of test_race makes a data race (and
// would otherwise succeed), rank 1 of test_panic panics.
func init() {
	measure := func(context.Context, *bench, int, int, int) (float64, error) { return 1, nil }
	registerXfer(&xferTest{name: "test_race", summary: "test only: every rank makes a data race",
		column: colLatency, about: "test only", fixedSizes: []int{8},
		measure: func(ctx context.Context, b *bench, size, warmup, iters int) (float64, error) {
			race()
			return measure(ctx, b, size, warmup, iters)
		}})
	registerXfer(&xferTest{name: "test_panic", summary: "test only: rank 1 panics",
		column: colLatency, about: "test only", fixedSizes: []int{8},
		measure: func(ctx context.Context, b *bench, size, warmup, iters int) (float64, error) {
			if b.rank == 1 {
				panic("rank panics on purpose")
			}
			return measure(ctx, b, size, warmup, iters)
		}})
}

// raced is written by two goroutines with no ordering between them.
var raced int

// race makes a data race the detector reports every time: two unordered writes.
func race() {
	done := make(chan struct{})
	go func() {
		raced = 1
		close(done)
	}()
	raced = 2
	<-done
}

// TestRunCheck: the check of a run fails one whose rank exits 1 (a failed data
// check), panics (even where a failing status is expected) or races, and quotes
// the ranks' output; a clean run passes.
func TestRunCheck(t *testing.T) {
	ok := runBench(t, "-np", "2", "-iters", "2", "-window", "2", "-timeout", "1m", "-min", "8", "-max", "8", "put_lat")
	if err := ok.check(0); err != nil {
		t.Fatalf("a clean run was judged failed: %v", err)
	}
	for _, tc := range []struct {
		name     string
		want     int    // the status the check is asked for
		in       string // in the error
		needRace bool
	}{
		{name: "test_badcheck", want: 0, in: "injected corruption"},
		{name: "test_panic", want: 2, in: `reports "panic: rank panics on purpose"`},
		{name: "test_race", want: 0, in: "WARNING: DATA RACE", needRace: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.needRace && !childtest.RaceEnabled {
				t.Skip("a race is reported only under the race detector (go test -race)")
			}
			b := runBench(t, "-timeout", "1m", tc.name)
			err := b.check(tc.want)
			if err == nil {
				t.Fatalf("run %s (status %d) passed the check; output:\n%s%s%s", tc.name, b.rc, b.stdout, b.stderr, b.ranks)
			}
			if !strings.Contains(err.Error(), tc.in) {
				t.Errorf("error lacks %q: %v", tc.in, err)
			}
		})
	}
}
