//go:build linux

package regcache

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/goportals/goportals/internal/verbs"
	"github.com/goportals/goportals/internal/verbs/soft"
	"golang.org/x/sys/unix"
)

// lowMemlockEnv marks a re-executed child that runs one test under a low
// RLIMIT_MEMLOCK; its value is the limit in bytes.
const lowMemlockEnv = "REGCACHE_LOW_MEMLOCK_CHILD"

// lowMemlockUID is the unprivileged user a root parent runs the child as: root holds
// CAP_IPC_LOCK, which exempts it from the limit.
const lowMemlockUID = 65534

// runLowMemlockChild runs the test name again in a child process under an
// RLIMIT_MEMLOCK of limit bytes, without CAP_IPC_LOCK (as an unprivileged user when
// the parent is root), and fails t with the child's output if it fails.
func runLowMemlockChild(t *testing.T, name, limit string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GOCOVERDIR=") {
			env = append(env, kv)
		}
	}
	env = append(env, lowMemlockEnv+"="+limit)
	if g := os.Getenv("GORACE"); !strings.Contains(g, "atexit_sleep_ms") {
		env = append(env, "GORACE="+strings.TrimSpace(g+" atexit_sleep_ms=50"))
	}
	cmd := exec.Command(exe, "-test.run=^"+name+"$", "-test.v", "-test.count=1")
	cmd.Env = env
	if os.Geteuid() == 0 {
		// The go tool's build directory is private to root: run a copy from a
		// directory the unprivileged user can enter.
		dir, err := os.MkdirTemp("", "regcache-memlock-")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(dir)
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		cp := filepath.Join(dir, "regcache.test")
		if err := copyFile(exe, cp); err != nil {
			t.Fatal(err)
		}
		cmd.Path, cmd.Args[0], cmd.Dir = cp, cp, dir
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: lowMemlockUID, Gid: lowMemlockUID}}
	}
	out, err := cmd.CombinedOutput()
	text := string(out)
	if err != nil || !strings.Contains(text, "--- PASS: "+name) {
		if err == nil && strings.Contains(text, "--- SKIP: "+name) {
			t.Skip("child skipped:\n" + text)
		}
		t.Fatalf("child (%v):\n%s", err, text)
	}
	t.Log(strings.TrimSpace(text))
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// lowerMemlock lowers RLIMIT_MEMLOCK in the child (no privilege needed to lower it)
// and skips when the limit would not apply.
func lowerMemlock(t *testing.T, limit string) {
	t.Helper()
	n, err := parseSize(limit)
	if err != nil {
		t.Fatal(err)
	}
	var r unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_MEMLOCK, &r); err != nil {
		t.Fatal(err)
	}
	r.Cur = n
	if r.Max < n {
		r.Max = n
	}
	if err := unix.Setrlimit(unix.RLIMIT_MEMLOCK, &r); err != nil {
		t.Fatal(err)
	}
	if hasIPCLock() {
		t.Skip("the child holds CAP_IPC_LOCK: RLIMIT_MEMLOCK does not bind it")
	}
}

// Under a 4 MiB RLIMIT_MEMLOCK, 64 distinct 2 MiB buffers registered one after the
// other through the soft provider (io_uring pins) all get cached registrations:
// each refusal evicts the previous entry and retries. A second 2 MiB registration
// while one is in use cannot fit, and its error says why.
func TestSoftProviderUnderLowMemlock(t *testing.T) {
	const limit = "4M"
	if os.Getenv(lowMemlockEnv) == "" {
		runLowMemlockChild(t, t.Name(), limit)
		return
	}
	lowerMemlock(t, limit)
	ctx, err := soft.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Close()
	pd, err := ctx.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	defer pd.Close()
	c, err := New[verbs.MR](pdRegistrar{pd: pd, access: verbs.AccessLocalWrite | verbs.AccessRemoteRead}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	t.Logf("pin method %s, notifier %s, cache cap %d B, RLIMIT_MEMLOCK %d B", ctx.PinMethod(),
		c.Stats().Notifier, c.Stats().MaxBytes, c.Stats().MemlockLimit)
	const n, size = 64, 2 << 20
	var keep [][]byte
	for i := 0; i < n; i++ {
		b := make([]byte, size)
		b[0] = byte(i)
		r, err := c.Acquire(b)
		if err != nil {
			t.Fatalf("buffer %d: %v (stats %+v)", i, err, c.Stats())
		}
		if err := c.Release(r); err != nil {
			t.Fatal(err)
		}
		keep = append(keep, b)
	}
	s := c.Stats()
	t.Logf("%d buffers of 2 MiB: misses %d retries after memlock refusals %d evictions %d fallbacks %d, locked %+v",
		n, s.Misses, s.MemlockRetries, s.Evictions, s.Fallbacks, s.Locked)
	if s.Misses != n || s.MemlockRetries == 0 || s.Fallbacks != 0 {
		t.Fatalf("want %d cached registrations, some after memlock refusals: %+v", n, s)
	}
	// One 2 MiB registration in use; 3 MiB more cannot be pinned next to it
	// (5 MiB is over the limit however the pins are counted: per process as an
	// HCA counts, or per user as io_uring does).
	held, err := c.Acquire(keep[0])
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release(held)
	_, err = c.Acquire(make([]byte, 3<<20))
	var me *MemlockError
	if !errors.As(err, &me) || !errors.Is(err, verbs.ErrMemlock) {
		t.Fatalf("a 3 MiB pin next to 2 MiB in use: %v, want a *MemlockError", err)
	}
	if me.Limit != 4<<20 || !me.LockedKnown || me.Locked.Pinned < size {
		t.Fatalf("error fields %+v", me)
	}
	t.Logf("error: %v", err)
}

// pdRegistrar registers through a verbs protection domain (as the engine's
// registry does).
type pdRegistrar struct {
	pd     verbs.PD
	access verbs.Access
}

func (r pdRegistrar) Register(mem []byte) (verbs.MR, error) { return r.pd.RegMR(mem, r.access) }
func (r pdRegistrar) Deregister(mr verbs.MR) error          { return mr.Dereg() }
