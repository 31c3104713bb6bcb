package main

import (
	"strings"
	"testing"
)

// TestDirectTransfers runs dput_lat and dput_bw (puts into md.Alloc memory on a
// non-matching NI) through the launcher at sizes around the eager limit and 1 MiB:
// each prints a row per size and its check verifies the data that arrived.
func TestDirectTransfers(t *testing.T) {
	for _, name := range []string{"dput_lat", "dput_bw"} {
		t.Run(name, func(t *testing.T) {
			b := mustRun(t, 0, "-np", "2", "-min", "512", "-max", "1048576", "-iters", "10", "-window", "4",
				"-timeout", "1m", name)
			rows := 0
			for _, l := range strings.Split(strings.TrimSpace(b.stdout), "\n") {
				if l != "" && !strings.HasPrefix(l, "#") && !strings.HasPrefix(l, "size") {
					rows++
				}
			}
			if rows != 12 { // 512 B to 1 MiB
				t.Fatalf("%d rows, want 12:\n%s", rows, b.stdout)
			}
		})
	}
}

// TestDirectCompareFlag: -direct makes -compare measure goportals with the direct
// tests.
func TestDirectCompareFlag(t *testing.T) {
	saved := directOpts.compare
	defer func() { directOpts.compare = saved }()
	directOpts.compare = false
	if oursTest("put_lat") != "put_lat" {
		t.Fatal("without -direct, -compare must run put_lat")
	}
	directOpts.compare = true
	if oursTest("put_lat") != "dput_lat" || oursTest("put_bw") != "dput_bw" {
		t.Fatal("with -direct, -compare must run dput_lat and dput_bw")
	}
	for _, n := range []string{"dput_lat", "dput_bw"} {
		if xferByName(n) == nil {
			t.Fatalf("%s not registered", n)
		}
	}
}
