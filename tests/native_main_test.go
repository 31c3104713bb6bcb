package tests

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/goportals/goportals/internal/bootstrap"
	"github.com/goportals/goportals/portals"
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

// launch runs scenario name on n ranks, each a copy of this test binary.
func launch(t *testing.T, name string, n int) {
	t.Helper()
	if testing.Short() {
		t.Skip("multi-process scenario; skipped with -short")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	w := &lockedBuffer{}
	_, err = bootstrap.Launch(context.Background(), bootstrap.LaunchConfig{
		N: n, Argv: []string{exe}, Env: append(os.Environ(), envNative+"="+name),
		Stdout: w, Stderr: w, Prefix: true, Timeout: time.Minute, Grace: time.Second,
	})
	out.WriteString(w.String())
	if err != nil {
		t.Fatalf("%s: %v\n%s", name, err, out.String())
	}
}
