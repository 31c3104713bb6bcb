package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/goportals/goportals/internal/bootstrap"
	"github.com/goportals/goportals/internal/bootstrap/childtest"
)

// TestSplit: the parts cover the range without gaps, the first n%p one larger.
func TestSplit(t *testing.T) {
	for _, c := range []struct{ n, p int }{{10, 3}, {7, 7}, {33, 4}, {5, 1}} {
		at := 0
		for i := 0; i < c.p; i++ {
			s, l := split(c.n, c.p, i)
			if s != at || l < c.n/c.p || l > c.n/c.p+1 {
				t.Fatalf("split(%d, %d, %d) = %d, %d", c.n, c.p, i, s, l)
			}
			at += l
		}
		if at != c.n {
			t.Fatalf("split(%d, %d) covers %d", c.n, c.p, at)
		}
	}
	d, err := newDecomp(6, 4, 10, 10)
	if err != nil || d.px != 2 || d.py != 3 || d.r != 1 || d.c != 1 {
		t.Fatalf("6 PEs, PE 4: %+v %v", d, err)
	}
	if _, err := newDecomp(4, 0, 1, 10); err == nil {
		t.Error("a grid of one row over 2 x 2 PEs was accepted")
	}
}

// TestCompareSerial: the one-PE check finds a changed point.
func TestCompareSerial(t *testing.T) {
	o := options{nx: 6, ny: 5, iters: 7}
	wd := o.ny + 2
	var bufs [2][]float64
	for i := range bufs {
		bufs[i] = make([]float64, (o.nx+2)*wd)
		for j := 0; j < wd; j++ {
			bufs[i][j] = 1
		}
	}
	for it := 0; it < o.iters; it++ {
		step(bufs[it%2], bufs[(it+1)%2], o.nx, o.ny, wd)
	}
	grid := make([]float64, o.nx*o.ny)
	for i := 0; i < o.nx; i++ {
		copy(grid[i*o.ny:(i+1)*o.ny], bufs[o.iters%2][(i+1)*wd+1:])
	}
	if bad := compareSerial(grid, o); bad != 0 {
		t.Fatalf("%d mismatches on the serial result itself", bad)
	}
	grid[7] += 1e-12
	if bad := compareSerial(grid, o); bad != 1 {
		t.Fatalf("%d mismatches after changing one point", bad)
	}
}

// TestHalo runs the relaxation on several PE counts (1 × 2, 1 × 3, 2 × 2)
// with uneven blocks and checks that it matches the one-PE relaxation.
func TestHalo(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the soft provider (and so the example) needs Linux")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command in PATH to build the example with")
	}
	bin := filepath.Join(t.TempDir(), "halo")
	build := append(append([]string{"build"}, childtest.BuildFlags()...), "-o", bin, ".")
	if out, err := exec.Command(goTool, build...).CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, n := range []int{1, 2, 3, 4} {
		var stdout, stderr bytes.Buffer
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		res, err := bootstrap.Launch(ctx, bootstrap.LaunchConfig{N: n,
			Argv: []string{bin, "-nx", "37", "-ny", "23", "-iters", "30"},
			Env:  append(os.Environ(), "GORACE=atexit_sleep_ms=0"), Stdout: &stdout, Stderr: &stderr,
			Timeout: 110 * time.Second})
		cancel()
		out := stdout.String() + stderr.String()
		if err != nil {
			t.Fatalf("%d PEs: %v\n%s", n, err, out)
		}
		for _, st := range res.Ranks {
			if e := childtest.Check(st.String(), st.ExitCode, 0, out); e != nil {
				t.Fatal(e)
			}
		}
		if !strings.Contains(stdout.String(), "identical to the one-PE relaxation: PASSED") {
			t.Errorf("%d PEs: no passing verification:\n%s", n, out)
		}
	}
}
