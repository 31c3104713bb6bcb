package nic

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/goportals/goportals/internal/bootstrap"
	"github.com/goportals/goportals/internal/bootstrap/childtest"
)

// The multi-process tests run this test binary as the ranks of a job through the
// real launcher (see TestMain). A job passes only when the launcher reports
// success, every rank exited 0, and no rank's output reports a data race, a panic
// or a fatal runtime error: a rank that leaves by syscall.Exit (as the dead-peer
// rank does) skips the race detector's exit status, so its report is the only
// trace of a race.

// lockedBuffer is a bytes.Buffer safe for the launcher's stdout and stderr
// copiers, which write to it concurrently.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
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

// childEnv is the environment of a rank running role: the race detector does
// not linger at exit (its default second of sleep per process).
func childEnv(role string) []string {
	gorace := "atexit_sleep_ms=0"
	if v := os.Getenv("GORACE"); v != "" {
		gorace = v + " " + gorace
	}
	return append(os.Environ(), "PORTALS_TEST_ROLE="+role, "GORACE="+gorace)
}

// runJob launches n ranks of this binary in role and returns their combined
// output (each line prefixed with "[rank] ") and the launcher's result.
func runJob(role string, n int) (string, *bootstrap.JobResult, error) {
	var out lockedBuffer
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	res, err := bootstrap.Launch(ctx, bootstrap.LaunchConfig{N: n, Argv: []string{os.Args[0], "-test.run=^$"},
		Env: childEnv(role), Stdout: &out, Stderr: &out, Prefix: true, Timeout: 60 * time.Second})
	return out.String(), res, err
}

// checkJob judges a job: nil if the launcher succeeded, every rank exited 0 and
// the output reports no race, panic or fatal error; otherwise an error saying
// why, with the output.
func checkJob(out string, res *bootstrap.JobResult, err error) error {
	var why []string
	if err != nil {
		why = append(why, "launcher: "+err.Error())
	}
	if res == nil || len(res.Ranks) == 0 {
		why = append(why, "no rank status")
	} else {
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
		why = append(why, fmt.Sprintf("output reports %q", line))
	}
	if len(why) == 0 {
		return nil
	}
	return fmt.Errorf("job failed: %s; output:\n%s", strings.Join(why, "; "), childtest.Quote(out))
}

// launch runs a two-rank job in role and fails the test unless checkJob passes
// it; it returns the output.
func launch(t *testing.T, role string) string {
	t.Helper()
	out, res, err := runJob(role, 2)
	if e := checkJob(out, res, err); e != nil {
		t.Fatal(e)
	}
	return out
}

// harnessRoles are ranks that misbehave on purpose, to test checkJob. They do
// not join the bootstrap.
var harnessRoles = map[string]func(rank string) int{
	"harness-ok": func(string) int { return 0 },
	"harness-exit1": func(rank string) int {
		if rank == "1" {
			fmt.Fprintln(os.Stderr, "rank fails on purpose")
			return 1
		}
		return 0
	},
	"harness-panic": func(rank string) int {
		if rank == "1" {
			panic("rank panics on purpose")
		}
		return 0
	},
	// Exits 0 through os.Exit: under -race the detector turns that into 66.
	"harness-race": func(string) int {
		race()
		return 0
	},
	// Leaves by syscall.Exit(0), as the dead-peer rank does: status 0, so only the
	// report in the output shows the race.
	"harness-race-syscall-exit": func(string) int {
		race()
		syscall.Exit(0)
		return 0
	},
}

// runHarnessRole runs a harness role if role names one.
func runHarnessRole(role string) (int, bool) {
	f, ok := harnessRoles[role]
	if !ok {
		return 0, false
	}
	fmt.Printf("role %s running\n", role)
	return f(os.Getenv(bootstrap.EnvRank)), true
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

// TestJobCheck: checkJob passes a clean job and fails one whose rank exits 1,
// panics or races (also when the racing rank then exits 0 by syscall.Exit), and
// its error quotes the ranks' output.
func TestJobCheck(t *testing.T) {
	for _, tc := range []struct {
		role     string
		fail     bool
		needRace bool
		want     string // in the error
	}{
		{role: "harness-ok"},
		{role: "harness-exit1", fail: true, want: "rank fails on purpose"},
		{role: "harness-panic", fail: true, want: "panic: rank panics on purpose"},
		{role: "harness-race", fail: true, needRace: true, want: "WARNING: DATA RACE"},
		{role: "harness-race-syscall-exit", fail: true, needRace: true, want: "WARNING: DATA RACE"},
	} {
		t.Run(tc.role, func(t *testing.T) {
			if tc.needRace && !childtest.RaceEnabled {
				t.Skip("a race is reported only under the race detector (go test -race)")
			}
			t.Parallel()
			out, res, err := runJob(tc.role, 2)
			if !strings.Contains(out, "role "+tc.role+" running") {
				t.Fatalf("the ranks did not run the role (%v):\n%s", err, out)
			}
			cerr := checkJob(out, res, err)
			if !tc.fail {
				if cerr != nil {
					t.Fatalf("a clean job was judged failed: %v", cerr)
				}
				return
			}
			if cerr == nil {
				t.Fatalf("job %s passed the check (result %+v); output:\n%s", tc.role, res, out)
			}
			if !strings.Contains(cerr.Error(), tc.want) || !strings.Contains(cerr.Error(), "role "+tc.role+" running") {
				t.Errorf("error lacks %q or the ranks' output: %v", tc.want, cerr)
			}
		})
	}
}
