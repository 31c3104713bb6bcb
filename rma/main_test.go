package rma_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/goportals/goportals/internal/bootstrap"
	"github.com/goportals/goportals/internal/bootstrap/childtest"
	"go.uber.org/goleak"
)

// envScenario names the scenario a re-executed test binary runs as one rank of a
// job started by launch.
const envScenario = "RMA_TEST_SCENARIO"

// scenarios are the multi-rank tests: each runs on every rank of a job and
// returns an error saying what it found wrong.
var scenarios = map[string]func(ctx context.Context) error{}

func TestMain(m *testing.M) {
	if name := os.Getenv(envScenario); name != "" {
		os.Exit(runRank(name))
	}
	goleak.VerifyTestMain(m)
}

// runRank runs one rank of scenario name and returns its exit status.
func runRank(name string) int {
	sc, ok := scenarios[name]
	if !ok {
		fmt.Fprintf(os.Stderr, "no scenario %q\n", name)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	if err := sc(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		return 1
	}
	return 0
}

// lockedBuffer collects the ranks' output from the launcher's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// launch runs scenario name on n ranks, each a copy of this test binary, through
// the launcher cmd/ptlrun uses, and fails the test unless every rank exited 0 and
// no rank's output reports a race, a panic or a fatal runtime error.
func launch(t *testing.T, name string, n int) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("the soft provider, which connects the ranks, needs Linux")
	}
	if testing.Short() {
		t.Skip("multi-process test; skipped with -short")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	out := &lockedBuffer{}
	res, err := bootstrap.Launch(context.Background(), bootstrap.LaunchConfig{
		N: n, Argv: []string{exe, "-test.run=^$"}, Env: append(os.Environ(), envScenario+"="+name, "GORACE=atexit_sleep_ms=0"),
		Stdout: out, Stderr: out, Prefix: true, Timeout: 90 * time.Second, Grace: time.Second,
	})
	var why []string
	if err != nil {
		why = append(why, "launcher: "+err.Error())
	}
	if res == nil || len(res.Ranks) != n {
		why = append(why, fmt.Sprintf("not %d rank statuses", n))
	} else {
		for _, r := range res.Ranks {
			if err := childtest.Check(fmt.Sprintf("rank %d", r.Rank), r.ExitCode, 0); err != nil {
				why = append(why, err.Error())
			}
		}
	}
	if line := childtest.Trouble(out.String()); line != "" {
		why = append(why, fmt.Sprintf("the output reports %q", line))
	}
	if len(why) > 0 {
		t.Fatalf("%s on %d ranks: %s; output:\n%s", name, n, strings.Join(why, "; "), childtest.Quote(out.String()))
	}
	t.Logf("%s on %d ranks:\n%s", name, n, out.String())
}
