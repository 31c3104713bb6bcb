package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestMain lets the test binary serve as the ranks of the transfer tests: the
// launcher re-executes its own binary (here, this one) with rankEnv set.
func TestMain(m *testing.M) {
	if os.Getenv(rankEnv) != "" {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	// The ranks inherit this: the race detector does not linger a second at
	// each rank's exit.
	gorace := "atexit_sleep_ms=0"
	if v := os.Getenv("GORACE"); v != "" {
		gorace = v + " " + gorace
	}
	os.Setenv("GORACE", gorace)
	os.Exit(m.Run())
}

var xferNames = []string{"put_lat", "get_lat", "put_bw", "get_bw", "atomic_lat", "put_rate"}

// wantRows are the sizes the short runs cover: an eager size, then sizes on both
// sides of the engine's eager limit (about 1 KiB), which switch to RDMA transfers.
func wantSizes(name string) []int {
	if name == "atomic_lat" {
		return []int{8}
	}
	return []int{512, 1024, 2048}
}

var shortFlags = []string{"-np", "2", "-min", "512", "-max", "2048", "-iters", "20", "-window", "8", "-timeout", "1m"}

// TestTransferTable runs every transfer test through the real launcher (two
// rank processes on the soft provider) and checks the table.
func TestTransferTable(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	for _, name := range xferNames {
		t.Run(name, func(t *testing.T) {
			b := mustRun(t, 0, append(shortFlags, name)...)
			t.Logf("\n%s", b.stdout)
			column := registryColumn(t, name)
			var lines []string
			for _, l := range strings.Split(strings.TrimSpace(b.stdout), "\n") {
				if !strings.HasPrefix(l, "#") {
					lines = append(lines, l)
				}
			}
			want := wantSizes(name)
			if len(lines) != 1+len(want) {
				t.Fatalf("want a header and %d rows, got:\n%s", len(want), b.stdout)
			}
			if f := strings.Fields(lines[0]); len(f) != 2 || f[0] != "size" || f[1] != column {
				t.Fatalf("header %q, want size and %s", lines[0], column)
			}
			for i, l := range lines[1:] {
				f := strings.Fields(l)
				if len(f) != 2 {
					t.Fatalf("row %q", l)
				}
				if size, err := strconv.Atoi(f[0]); err != nil || size != want[i] {
					t.Fatalf("row %q: size, want %d", l, want[i])
				}
				checkValue(t, l, f[1])
			}
		})
	}
}

// TestTransferJSON checks the -json form of every transfer test.
func TestTransferJSON(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	for _, name := range xferNames {
		t.Run(name, func(t *testing.T) {
			b := mustRun(t, 0, append(shortFlags, "-json", name)...)
			var raw []map[string]any
			if err := json.Unmarshal([]byte(b.stdout), &raw); err != nil {
				t.Fatalf("not one JSON array of rows: %v\n%s", err, b.stdout)
			}
			var rows []map[string]float64
			for _, r := range raw {
				if p, _ := r["path"].(string); p != "shm" {
					t.Fatalf("row %v: path %q, want shm (two ranks of one node)", r, p)
				}
				m := map[string]float64{}
				for k, v := range r {
					if f, ok := v.(float64); ok {
						m[k] = f
					}
				}
				rows = append(rows, m)
			}
			column := registryColumn(t, name)
			want := wantSizes(name)
			if len(rows) != len(want) {
				t.Fatalf("%d rows, want %d:\n%s", len(rows), len(want), b.stdout)
			}
			for i, r := range rows {
				if len(r) != 2 || r["size"] != float64(want[i]) {
					t.Fatalf("row %v: want size %d and %s only", r, want[i], column)
				}
				v, ok := r[column]
				if !ok || v <= 0 || math.IsInf(v, 0) {
					t.Fatalf("row %v: no positive %s", r, column)
				}
			}
		})
	}
}

func registryColumn(t *testing.T, name string) string {
	t.Helper()
	for _, x := range xferTests {
		if x.name == name {
			return x.column
		}
	}
	t.Fatalf("no transfer test %s", name)
	return ""
}

func checkValue(t *testing.T, row, s string) {
	t.Helper()
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v <= 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		t.Fatalf("row %q: value %q is not a positive number", row, s)
	}
}

// TestTransferUsage: flags the transfer tests cannot use are refused before any
// rank starts.
func TestTransferUsage(t *testing.T) {
	for _, args := range [][]string{
		{"-min", "0", "put_lat"},
		{"-min", "64", "-max", "8", "put_bw"},
		{"-np", "1", "get_lat"},
		{"-window", "0", "put_rate"},
		{"-iters", "-1", "atomic_lat"},
	} {
		var out, errb bytes.Buffer
		if rc := run(args, &out, &errb); rc != 2 {
			t.Errorf("%v: rc %d, want 2 (stderr %q)", args, rc, errb.String())
		}
		if out.Len() != 0 {
			t.Errorf("%v printed %q", args, out.String())
		}
	}
}

// TestCheckArrived: the data check catches a wrong byte and names where.
func TestCheckArrived(t *testing.T) {
	got := pattern(1, 64, 100)
	if err := checkArrived(got, 1, 64, 100); err != nil {
		t.Fatal(err)
	}
	got[57]++
	err := checkArrived(got, 1, 64, 100)
	if err == nil || !strings.Contains(err.Error(), "byte 57 of 100") {
		t.Fatalf("corrupted data: %v", err)
	}
	if err := checkArrived(pattern(0, 64, 64), 1, 64, 64); err == nil {
		t.Fatal("another rank's data passed")
	}
	if err := checkArrived(pattern(1, 32, 64), 1, 64, 64); err == nil {
		t.Fatal("data of an earlier size passed")
	}
}

// TestIterations: OSU's counts by default, -iters with a tenth as warm-up.
func TestIterations(t *testing.T) {
	lat, bw := &xferTest{}, &xferTest{large: true}
	defer func(n int) { xferOpts.iters = n }(xferOpts.iters)
	xferOpts.iters = 0
	for _, c := range []struct {
		x                   *xferTest
		size, warmup, iters int
	}{
		{lat, 8, 100, 10000}, {lat, 8 << 10, 100, 10000}, {lat, 16 << 10, 10, 1000},
		{bw, 8, 10, 100}, {bw, 8 << 10, 10, 100}, {bw, 1 << 20, 2, 20},
	} {
		if w, n := c.x.iterations(c.size); w != c.warmup || n != c.iters {
			t.Errorf("large=%v size %d: %d+%d iterations, want %d+%d", c.x.large, c.size, w, n, c.warmup, c.iters)
		}
	}
	xferOpts.iters = 5
	if w, n := lat.iterations(1 << 20); w != 1 || n != 5 {
		t.Errorf("-iters 5: %d+%d", w, n)
	}
}

// TestTransferThreeRanks: ranks beyond 1 join the NI and every barrier but move
// no data.
func TestTransferThreeRanks(t *testing.T) {
	b := mustRun(t, 0, "-np", "3", "-min", "8", "-max", "16", "-iters", "20", "-window", "8", "-json", "put_rate")
	var rows []map[string]any
	if err := json.Unmarshal([]byte(b.stdout), &rows); err != nil || len(rows) != 2 {
		t.Fatalf("rows %v (%v):\n%s", rows, err, b.stdout)
	}
}

// TestTransferDeadline: ranks that run out of time fail (status 2) instead of
// hanging.
func TestTransferDeadline(t *testing.T) {
	b := mustRun(t, 2, "-timeout", "1ms", "put_lat")
	if !strings.Contains(b.stderr, "rank failed") {
		t.Fatalf("stderr does not name the failed rank:\n%s", b.stderr)
	}
}

// A transfer test that exists only in the test binary (whose ranks are the test
// binary too): rank 1's check fails, as it does when data arrives corrupted.
func init() {
	registerXfer(&xferTest{name: "test_badcheck", summary: "test only: rank 1's data check fails",
		column: colLatency, about: "test only", fixedSizes: []int{8},
		measure: func(context.Context, *bench, int, int, int) (float64, error) { return 1, nil },
		check: func(_ context.Context, b *bench, _, _, _ int) error {
			if b.rank == 1 {
				return errors.New("injected corruption")
			}
			return nil
		}})
}

// TestTransferCheckFails: a failed data check on a rank is a failed test (status
// 1) for the launcher, and the other rank does not hang.
func TestTransferCheckFails(t *testing.T) {
	b := mustRun(t, 1, "-timeout", "1m", "test_badcheck")
	if !strings.Contains(b.stderr, "rank 1") {
		t.Fatalf("stderr does not name rank 1:\n%s", b.stderr)
	}
	if !strings.Contains(b.ranks, "rank 1: injected corruption") {
		t.Fatalf("rank 1 does not report the failed check:\n%s", b.ranks)
	}
}

// TestTransferPathTCP: with PTL_SOFT_PATH=tcp the table header and every JSON row
// name the TCP path.
func TestTransferPathTCP(t *testing.T) {
	t.Setenv("PTL_SOFT_PATH", "tcp")
	b := mustRun(t, 0, "-min", "8", "-max", "16", "-iters", "20", "-json", "put_lat")
	var rows []map[string]any
	if err := json.Unmarshal([]byte(b.stdout), &rows); err != nil || len(rows) != 2 {
		t.Fatalf("rows %v (%v):\n%s", rows, err, b.stdout)
	}
	for _, r := range rows {
		if r["path"] != "tcp" {
			t.Fatalf("row %v: want path tcp", r)
		}
	}
	b = mustRun(t, 0, "-min", "8", "-max", "8", "-iters", "20", "put_lat")
	if !strings.Contains(b.stdout, "path tcp") {
		t.Fatalf("the table's header does not name the path:\n%s", b.stdout)
	}
}

// TestSpinWarm: the spin before a size's iterations lasts at least -warm, and the
// flag defaults to defaultWarm.
func TestSpinWarm(t *testing.T) {
	start := time.Now()
	spinWarm(3 * time.Millisecond)
	if d := time.Since(start); d < 3*time.Millisecond {
		t.Fatalf("spinWarm(3ms) returned after %v", d)
	}
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	xferFlags(fs)
	if f := fs.Lookup("warm"); f == nil || f.DefValue != defaultWarm.String() {
		t.Fatalf("-warm flag %+v, want default %v", f, defaultWarm)
	}
}
