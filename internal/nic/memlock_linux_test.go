//go:build linux

package nic

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/goportals/goportals/eq"
	"golang.org/x/sys/unix"
)

// lowMemlockChildEnv marks the re-executed child of TestPutsUnderLowMemlock.
const lowMemlockChildEnv = "PORTALS_LOW_MEMLOCK_CHILD"

// lowMemlockUID is the unprivileged user a root parent runs the child as (root
// holds CAP_IPC_LOCK, which exempts it from RLIMIT_MEMLOCK). io_uring charges pins
// per user, so it is not the uid other packages' children use at the same time.
const lowMemlockUID = 65533

// Under RLIMIT_MEMLOCK = 4 MiB and no CAP_IPC_LOCK, puts from 64 distinct 2 MiB
// buffers succeed: each new source registration is refused at first (the previous
// buffer's cached 2 MiB, the target's window and the io_uring ring fill the limit),
// the cache evicts the unused entry and retries. The target's window is 1 MiB (a
// 2 MiB window next to a 2 MiB source cannot fit under 4 MiB at all), so each put
// is truncated to 1 MiB there while the initiator pins all 2 MiB.
func TestPutsUnderLowMemlock(t *testing.T) {
	if os.Getenv(lowMemlockChildEnv) == "" {
		runLowMemlockChild(t)
		return
	}
	var r unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_MEMLOCK, &r); err != nil {
		t.Fatal(err)
	}
	r.Cur = 4 << 20
	if err := unix.Setrlimit(unix.RLIMIT_MEMLOCK, &r); err != nil {
		t.Fatal(err)
	}
	const window, size, n = 1 << 20, 2 << 20, 64
	nis := newNIs(t, 2, NIMatching|NIPhysical)
	init, tgt := nis[0], nis[1]
	tbuf, tq, _ := target(t, tgt, window)
	iq, _ := init.EQAlloc(64)
	dst, _ := tgt.PhysID()
	for i := 0; i < n; i++ {
		src := make([]byte, size)
		fill(src, byte(i))
		m, err := init.MDBind(MDSpec{Start: src, EQ: iq})
		if err != nil {
			t.Fatal(err)
		}
		if err := Put(m, 0, size, AckReqFull, dst, 4, 0x42, 0, 0, 0); err != nil {
			t.Fatalf("put %d: %v\ncache: %+v", i, err, init.CacheStats())
		}
		if ev := waitEvent(t, tq); ev.Type != eq.EventPut || ev.NIFail != eq.NIOK || ev.MLength != window {
			t.Fatalf("put %d: target event %+v", i, ev)
		}
		for got := 0; got < 2; got++ {
			if ev := waitEvent(t, iq); ev.NIFail != eq.NIOK {
				t.Fatalf("put %d: initiator event %+v\ncache: %+v", i, ev, init.CacheStats())
			}
		}
		if !bytes.Equal(tbuf, src[:window]) {
			t.Fatalf("put %d: data differs", i)
		}
		if err := m.Release(); err != nil {
			t.Fatal(err)
		}
	}
	s := init.CacheStats()
	t.Logf("%d puts of 2 MiB under RLIMIT_MEMLOCK 4 MiB: initiator cache misses %d, memlock retries %d, evictions %d, fallbacks %d, pinned %d B (cap %d B); process locked %+v; notifier %s",
		n, s.Misses, s.MemlockRetries, s.Evictions, s.Fallbacks, s.PinnedBytes, s.MaxBytes, s.Locked, s.Notifier)
	if s.MemlockLimit != 4<<20 {
		t.Fatalf("the cache does not see the 4 MiB limit (CAP_IPC_LOCK?): %+v", s)
	}
	if s.MemlockRetries == 0 {
		t.Fatalf("no registration was refused: the test did not reach the limit: %+v", s)
	}
}

// runLowMemlockChild runs the calling test again in a child without CAP_IPC_LOCK:
// as lowMemlockUID from a copy of the binary in a directory that user can enter
// when the parent is root, as the same user otherwise. The child lowers its own
// RLIMIT_MEMLOCK (lowering needs no privilege).
func runLowMemlockChild(t *testing.T) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	env := []string{lowMemlockChildEnv + "=1", "GORACE=atexit_sleep_ms=0 " + os.Getenv("GORACE")}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GOCOVERDIR=") && !strings.HasPrefix(kv, "GORACE=") && !strings.HasPrefix(kv, "PORTALS_TEST_ROLE=") {
			env = append(env, kv)
		}
	}
	cmd := exec.Command(exe, "-test.run=^"+t.Name()+"$", "-test.v", "-test.count=1")
	cmd.Env = env
	if os.Geteuid() == 0 {
		dir, err := os.MkdirTemp("", "portals-memlock-")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(dir)
		cp := filepath.Join(dir, "portals.test")
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := copyExecutable(exe, cp); err != nil {
			t.Fatal(err)
		}
		cmd.Path, cmd.Args[0], cmd.Dir = cp, cp, dir
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: lowMemlockUID, Gid: lowMemlockUID}}
	}
	out, err := cmd.CombinedOutput()
	text := string(out)
	if err != nil || !strings.Contains(text, "--- PASS: "+t.Name()) {
		t.Fatalf("child (%v):\n%s", err, text)
	}
	t.Log(strings.TrimSpace(text))
}

func copyExecutable(from, to string) error {
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
