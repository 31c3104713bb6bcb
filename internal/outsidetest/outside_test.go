package outsidetest

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/goportals/goportals/internal/bootstrap/childtest"
)

// TestOutsideModule builds cmd/ptlrun and the outside module's program (with the
// race detector when this test has it) and runs the program as two ranks, as a
// user would: "ptlrun -np 2 outside". Each rank must have put its message into its
// neighbour's memory, read it back, and taken a distinct ticket from rank 0's
// counter, which ends at 2.
func TestOutsideModule(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the soft provider, which connects the ranks, needs Linux")
	}
	if testing.Short() {
		t.Skip("builds two programs and runs a job; skipped with -short")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command in PATH to build the outside module with")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	build := func(dir, out string, flags ...string) {
		t.Helper()
		args := append(append([]string{"build"}, flags...), "-o", filepath.Join(bin, out), ".")
		cmd := exec.Command(goTool, args...)
		cmd.Dir = dir
		// The outside module resolves goportals through its replace directive and
		// its own go.sum, never through this module's settings.
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly")
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %v in %s: %v\n%s", args, dir, err, b)
		}
	}
	build(filepath.Join(root, "cmd", "ptlrun"), "ptlrun")
	build(filepath.Join(root, "tests", "outside"), "outside", childtest.BuildFlags()...)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "ptlrun"), "-np", "2", "-timeout", "90s",
		filepath.Join(bin, "outside"))
	cmd.Env = append(os.Environ(), "GORACE=atexit_sleep_ms=0")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	status := 0
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatalf("ptlrun: %v", err)
		}
		status = ee.ExitCode()
	}
	if err := childtest.Check("ptlrun -np 2 outside", status, 0, stdout.String(), stderr.String()); err != nil {
		t.Fatal(err)
	}
	out := stdout.String()
	t.Logf("\n%s", out)
	lines := regexp.MustCompile(`(?m)^rank (\d): read back (\w+), ticket (\d+), counter (\d+), got "([^"]*)"$`).
		FindAllStringSubmatch(out, -1)
	if len(lines) != 2 {
		t.Fatalf("%d rank lines, want 2", len(lines))
	}
	sort.Slice(lines, func(i, j int) bool { return lines[i][1] < lines[j][1] })
	var tickets []string
	for i, l := range lines {
		rank, from := strconv.Itoa(i), strconv.Itoa(1-i)
		if l[1] != rank || l[2] != "true" || l[5] != "hello from rank "+from {
			t.Errorf("rank line %q: want rank %s reading back true and holding rank %s's message", l[0], rank, from)
		}
		tickets = append(tickets, l[3])
	}
	sort.Strings(tickets)
	if tickets[0] != "0" || tickets[1] != "1" {
		t.Errorf("tickets %v, want 0 and 1", tickets)
	}
	if lines[0][4] != "2" {
		t.Errorf("rank 0's counter is %s after two fetch-adds, want 2", lines[0][4])
	}
}
