package shmem

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/goportals/goportals/internal/bootstrap"
	"github.com/goportals/goportals/internal/bootstrap/childtest"
	"go.uber.org/goleak"
)

// The multi-PE tests run this test binary as the PEs of a job through the
// launcher (SHMEM_TEST_ROLE selects what the PEs do). A job passes when the
// launcher reports success, every PE exited 0 after printing "role ok", and no
// output reports a data race, a panic or a fatal runtime error.

const roleEnv = "SHMEM_TEST_ROLE"

func TestMain(m *testing.M) {
	if role := os.Getenv(roleEnv); role != "" {
		os.Exit(runRole(role))
	}
	before := goleak.IgnoreCurrent()
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(before); err != nil {
			fmt.Fprintln(os.Stderr, "goroutine leak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// runRole runs one PE of a job: Init, the role, Close.
func runRole(role string) int {
	f, ok := roles[role]
	if !ok {
		fmt.Fprintln(os.Stderr, "no role", role)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), 80*time.Second)
	defer cancel()
	w, err := Init(ctx, &Options{HeapSize: 64 << 20})
	if err != nil {
		fmt.Fprintln(os.Stderr, "init:", err)
		return 1
	}
	rerr := f(ctx, w)
	cerr := w.Close(ctx)
	if closeMayFail[role] && rerr == nil {
		cerr = nil // a PE left without Close: the final barrier cannot succeed
	}
	if rerr != nil {
		fmt.Fprintf(os.Stderr, "PE %d: %s: %v\n", w.MyPE(), role, rerr)
		return 1
	}
	if cerr != nil {
		fmt.Fprintf(os.Stderr, "PE %d: close: %v\n", w.MyPE(), cerr)
		return 1
	}
	fmt.Printf("%s ok\n", role)
	return 0
}

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

// launch runs role on n PEs and fails t unless every PE passed. env is added
// to the PEs' environment.
func launch(t *testing.T, role string, n int, env ...string) {
	t.Helper()
	if _, ok := roles[role]; !ok {
		t.Fatalf("no role %q", role)
	}
	var out lockedBuffer
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	gorace := "atexit_sleep_ms=0"
	if v := os.Getenv("GORACE"); v != "" {
		gorace = v + " " + gorace
	}
	env = append(append(os.Environ(), roleEnv+"="+role, "GORACE="+gorace), env...)
	res, err := bootstrap.Launch(ctx, bootstrap.LaunchConfig{N: n, Argv: []string{os.Args[0], "-test.run=^$"},
		Env: env, Stdout: &out, Stderr: &out, Prefix: true, Timeout: 100 * time.Second})
	text := out.String()
	var why []string
	if err != nil {
		why = append(why, "launcher: "+err.Error())
	}
	if res == nil || len(res.Ranks) != n {
		why = append(why, "missing rank statuses")
	} else {
		for _, r := range res.Ranks {
			if !r.Success() {
				why = append(why, r.String())
			}
		}
	}
	if line := childtest.Trouble(text); line != "" {
		why = append(why, fmt.Sprintf("output reports %q", line))
	}
	for pe := 0; pe < n; pe++ {
		if !strings.Contains(text, fmt.Sprintf("[%d] %s ok", pe, role)) {
			why = append(why, fmt.Sprintf("PE %d did not report ok", pe))
		}
	}
	if len(why) > 0 {
		t.Fatalf("job %s on %d PEs failed: %s; output:\n%s", role, n, strings.Join(why, "; "), childtest.Quote(text))
	}
}

// testRole runs role on 2 and on 4 PEs.
func testRole(t *testing.T, role string) {
	for _, n := range []int{2, 4} {
		t.Run(fmt.Sprintf("%dPE", n), func(t *testing.T) { launch(t, role, n) })
	}
}

func TestPutGet(t *testing.T)     { testRole(t, "putget") }
func TestPutGetNBI(t *testing.T)  { testRole(t, "nbi") }
func TestStrided(t *testing.T)    { testRole(t, "strided") }
func TestPutSignal(t *testing.T)  { testRole(t, "putsignal") }
func TestFence(t *testing.T)      { testRole(t, "fence") }
func TestDeadPE(t *testing.T)     { launch(t, "deadpe", 2) }
func TestGlobal(t *testing.T)     { testRole(t, "global") }
func TestAtomics(t *testing.T)    { testRole(t, "amo") }
func TestFetchAdd(t *testing.T)   { testRole(t, "fadd") }
func TestWaitUntil(t *testing.T)  { testRole(t, "waituntil") }
func TestBarrier(t *testing.T)    { testRole(t, "barrier") }
func TestBroadcast(t *testing.T)  { testRole(t, "broadcast") }
func TestCollect(t *testing.T)    { testRole(t, "collect") }
func TestAlltoall(t *testing.T)   { testRole(t, "alltoall") }
func TestReductions(t *testing.T) { testRole(t, "reduce") }
func TestLock(t *testing.T)       { testRole(t, "lock") }
func TestContexts(t *testing.T)   { testRole(t, "ctx") }
func TestAllocation(t *testing.T) { testRole(t, "alloc") }
func TestErrors(t *testing.T)     { testRole(t, "errors") }
