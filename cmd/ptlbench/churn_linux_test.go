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

func TestChurnShort(t *testing.T) {
	if err := driverhooks.DefaultErr(); errors.Is(err, driverhooks.ErrNotSupported) {
		t.Skip("userfaultfd unavailable: " + err.Error())
	}
	if os.Geteuid() != 0 {
		t.Skip("the PFN oracle needs root to read page frames from /proc/self/pagemap")
	}
	if testing.Short() {
		t.Skip("runs the churn for 2 s")
	}
	var out, errb bytes.Buffer
	rc := run([]string{"-duration", "2s", "-seed", "1", "churn"}, &out, &errb)
	if rc != 0 {
		t.Fatalf("rc %d\n%s%s", rc, out.String(), errb.String())
	}
	m := regexp.MustCompile(`(?m)^stale=(\d+) invalidations=(\d+) hits=(\d+) misses=(\d+)$`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("no summary line in:\n%s", out.String())
	}
	if m[1] != "0" {
		t.Fatalf("stale hits: %s", m[0])
	}
	if n, _ := strconv.Atoi(m[2]); n == 0 {
		t.Fatalf("no invalidations: %s", m[0])
	}
}
