//go:build linux

package main

import (
	"bytes"
	"errors"
	"os"
	"regexp"
	"strconv"
	"testing"

	"github.com/goportals/goportals/driverhooks"
)

// churnSummary matches the last line of a churn run.
var churnSummary = regexp.MustCompile(`(?m)^stale=(\d+) invalidations=(\d+) hits=(\d+) misses=(\d+) notifier=(\S+) madvise-failures=(\d+) window-stale=(\d+)$`)

// runChurnFor runs churn for 2 s with extra flags and returns its summary fields
// and output.
func runChurnFor(t *testing.T, flags ...string) ([]string, string) {
	t.Helper()
	if err := driverhooks.DefaultErr(); errors.Is(err, driverhooks.ErrNotSupported) {
		t.Skip("no notifier backend: " + err.Error())
	}
	if os.Geteuid() != 0 {
		t.Skip("the PFN oracle needs root to read page frames from /proc/self/pagemap")
	}
	if testing.Short() {
		t.Skip("runs the churn for 2 s")
	}
	var out, errb bytes.Buffer
	args := append([]string{"-duration", "2s", "-seed", "1"}, flags...)
	rc := run(append(args, "churn"), &out, &errb)
	if rc != 0 {
		t.Fatalf("rc %d\n%s%s", rc, out.String(), errb.String())
	}
	m := churnSummary.FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("no summary line in:\n%s", out.String())
	}
	return m, out.String()
}

// The default churn (soft provider: io_uring pins) sees no stale hit, exercises the
// notifier, names it, and madvise(DONTNEED/FREE) never fails on cached ranges.
func TestChurnShort(t *testing.T) {
	m, out := runChurnFor(t)
	if m[1] != "0" {
		t.Fatalf("stale hits: %s", m[0])
	}
	if n, _ := strconv.Atoi(m[2]); n == 0 {
		t.Fatalf("no invalidations: %s", m[0])
	}
	if k := driverhooks.Default().Kind(); m[5] != string(k) {
		t.Fatalf("notifier reported %q, the process uses %q", m[5], k)
	}
	if !regexp.MustCompile(`pin=soft, io_uring`).MatchString(out) {
		t.Skipf("the soft provider does not pin with io_uring here:\n%s", out)
	}
	if m[6] != "0" {
		t.Fatalf("madvise failed on ranges pinned by io_uring: %s\n%s", m[0], out)
	}
}

// Under mlock madvise(DONTNEED/FREE) is refused on cached ranges: the run reports
// the failures (and still passes: they are what mlock does).
func TestChurnCountsMadviseFailures(t *testing.T) {
	m, out := runChurnFor(t, "-pin", "mlock")
	if n, _ := strconv.Atoi(m[6]); n == 0 {
		t.Fatalf("no madvise failure counted under mlock:\n%s", out)
	}
}
