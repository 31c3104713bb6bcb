package tests

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/goportals/goportals/internal/bootstrap"
	"github.com/goportals/goportals/internal/bootstrap/childtest"
	portals "github.com/goportals/goportals/internal/nic"
	"go.uber.org/goleak"
)

// envNative names the native conformance scenario a re-executed test binary runs as
// one rank of a job started with bootstrap.Launch.
const envNative = "PTLTEST_NATIVE"

// scenario is one rank's part of a native conformance test: it gets the job's
// bootstrap (for barriers) and a Portals process over it.
type scenario func(ctx context.Context, b bootstrap.Bootstrap, p *portals.Process) error

var scenarios = map[string]scenario{}

func TestMain(m *testing.M) {
	if name := os.Getenv(envNative); name != "" {
		os.Exit(nativeRank(name))
	}
	goleak.VerifyTestMain(m)
}

// nativeRank runs one rank of a scenario and returns its exit status.
func nativeRank(name string) int {
	sc, ok := scenarios[name]
	if !ok {
		fmt.Fprintf(os.Stderr, "no scenario %q\n", name)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	b, err := bootstrap.Open(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bootstrap:", err)
		return 1
	}
	defer b.Close()
	p, err := portals.NewProcess(b, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "NewProcess:", err)
		return 1
	}
	err = protect(func() error { return sc(ctx, b, p) })
	if cerr := p.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("Process.Close: %w", cerr)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "rank %d: %v\n", b.Rank(), err)
		return 1
	}
	return 0
}

// launch runs scenario name on n ranks, each a copy of this test binary, and fails
// the test unless the launcher succeeded, every rank exited 0 and the ranks' output
// reports no data race, panic or fatal runtime error (childtest): a rank's race
// report or panic can come with a status the launcher does not object to.
func launch(t *testing.T, name string, n int) {
	t.Helper()
	if testing.Short() {
		t.Skip("multi-process scenario; skipped with -short")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	w := &lockedBuffer{}
	res, err := bootstrap.Launch(context.Background(), bootstrap.LaunchConfig{
		N: n, Argv: []string{exe}, Env: append(os.Environ(), envNative+"="+name),
		Stdout: w, Stderr: w, Prefix: true, Timeout: time.Minute, Grace: time.Second,
	})
	if why := judgeRanks(w.String(), n, res, err); why != "" {
		t.Fatalf("%s: %s; output:\n%s", name, why, childtest.Quote(w.String()))
	}
}

// judgeRanks returns why a job of n ranks failed, or "" when the launcher returned
// no error, every rank exited 0 and out shows no trouble.
func judgeRanks(out string, n int, res *bootstrap.JobResult, err error) string {
	var why []string
	if err != nil {
		why = append(why, "launcher: "+err.Error())
	}
	if res == nil || len(res.Ranks) != n {
		got := 0
		if res != nil {
			got = len(res.Ranks)
		}
		why = append(why, fmt.Sprintf("%d rank statuses for %d ranks", got, n))
	}
	if res != nil {
		for _, r := range res.Ranks {
			if r.Success() {
				continue
			}
			s := r.String()
			if r.ExitCode == childtest.RaceExitCode && childtest.RaceEnabled {
				s += " (the race detector's status: a data race was reported)"
			}
			why = append(why, s)
		}
	}
	if line := childtest.Trouble(out); line != "" {
		why = append(why, fmt.Sprintf("the output reports %q", line))
	}
	return strings.Join(why, "; ")
}

// TestJudgeRanks: a clean exit does not hide a race report or panic in the output,
// and a missing or failed rank is reported.
func TestJudgeRanks(t *testing.T) {
	ok := &bootstrap.JobResult{Ranks: []bootstrap.RankStatus{{Rank: 0, Pid: 10}, {Rank: 1, Pid: 11}}}
	if why := judgeRanks("[0] fine\n[1] fine\n", 2, ok, nil); why != "" {
		t.Errorf("a clean job: %s", why)
	}
	if why := judgeRanks("[1] WARNING: DATA RACE\n", 2, ok, nil); !strings.Contains(why, "DATA RACE") {
		t.Errorf("a race report with clean statuses: %q", why)
	}
	if why := judgeRanks("[0] panic: boom\n", 2, ok, nil); !strings.Contains(why, "panic: boom") {
		t.Errorf("a panic with clean statuses: %q", why)
	}
	if why := judgeRanks("", 3, ok, nil); why == "" {
		t.Error("two statuses for three ranks passed")
	}
	bad := &bootstrap.JobResult{Ranks: []bootstrap.RankStatus{{Rank: 0, Pid: 10}, {Rank: 1, Pid: 11, ExitCode: 1}}}
	if why := judgeRanks("", 2, bad, nil); why == "" {
		t.Error("a rank that exited 1 passed")
	}
}
