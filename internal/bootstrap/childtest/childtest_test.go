package childtest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// childEnv switches the test binary into a child that misbehaves as told.
const childEnv = "CHILDTEST_CHILD"

func TestMain(m *testing.M) {
	if mode := os.Getenv(childEnv); mode != "" {
		os.Exit(child(mode))
	}
	os.Exit(m.Run())
}

// child is the body of a child process; it returns its exit status.
func child(mode string) int {
	fmt.Println("child", mode, "running")
	switch mode {
	case "ok":
		return 0
	case "exit1":
		fmt.Fprintln(os.Stderr, "child fails on purpose")
		return 1
	case "race", "race-exit3":
		race()
		if mode == "race-exit3" {
			return 3
		}
		return 0
	case "panic":
		panic("child panics on purpose")
	}
	return 2
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

// runChild runs this binary as a child in mode and returns its status and output.
func runChild(t *testing.T, mode string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+mode, "GORACE=atexit_sleep_ms=0")
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("run child %s: %v", mode, err)
	}
	return cmd.ProcessState.ExitCode(), out.String(), errOut.String()
}

// Check passes a child that exits 0 quietly and fails one that exits with another
// status, panics or races, whatever its status, quoting the child's output.
func TestCheckJudgesRealChildren(t *testing.T) {
	for _, tc := range []struct {
		mode     string
		fail     bool
		needRace bool
		want     string // in the error
	}{
		{mode: "ok"},
		{mode: "exit1", fail: true, want: "exited with status 1, want 0"},
		{mode: "panic", fail: true, want: `reports "panic: child panics on purpose"`},
		{mode: "race", fail: true, needRace: true, want: "WARNING: DATA RACE"},
		// A racing child that exits with the expected non-zero status still fails.
		{mode: "race-exit3", fail: true, needRace: true, want: "WARNING: DATA RACE"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			if tc.needRace && !RaceEnabled {
				t.Skip("a race is reported only under the race detector (go test -race)")
			}
			t.Parallel()
			status, out, errOut := runChild(t, tc.mode)
			want := 0
			if tc.mode == "race-exit3" {
				want = 3
			}
			err := Check("child "+tc.mode, status, want, out, errOut)
			if !tc.fail {
				if err != nil {
					t.Fatalf("a clean child was judged failed: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("child %s (status %d) passed the check; output:\n%s%s", tc.mode, status, out, errOut)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error lacks %q: %v", tc.want, err)
			}
			if !strings.Contains(err.Error(), "child "+tc.mode+" running") {
				t.Errorf("error does not quote the child's output: %v", err)
			}
			if tc.mode == "race" && !strings.Contains(err.Error(), "status 66") {
				t.Errorf("a race in a child that exits 0 should give status %d: %v", RaceExitCode, err)
			}
		})
	}
}

func TestTrouble(t *testing.T) {
	for out, want := range map[string]string{
		"":                                       "",
		"all fine\n":                             "",
		"a line that mentions panic: mid-line\n": "",
		"x\nWARNING: DATA RACE\nWrite at 0x00c0 by goroutine 7:\n": "WARNING: DATA RACE",
		"[3] panic: boom\n[3] \n[3] goroutine 1 [running]:\n":      "[3] panic: boom",
		"fatal error: concurrent map writes\n":                     "fatal error: concurrent map writes",
	} {
		if got := Trouble(out); got != want {
			t.Errorf("Trouble(%q) = %q, want %q", out, got, want)
		}
	}
}

func TestQuoteCutsLongOutput(t *testing.T) {
	long := strings.Repeat("a", maxQuoted) + strings.Repeat("b", 100) + "END"
	q := Quote(long)
	if len(q) > maxQuoted+100 || !strings.HasSuffix(q, "END") || !strings.HasPrefix(q, "aaa") {
		t.Fatalf("quote of %d bytes: %d bytes, ends %q", len(long), len(q), q[len(q)-10:])
	}
	if Quote("short") != "short" {
		t.Fatal("short output changed")
	}
}
