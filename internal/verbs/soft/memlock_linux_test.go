//go:build linux

package soft

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/goportals/goportals/internal/verbs"
)

// The memory-lock limit test runs in a child process (the test binary again, with
// memlockChildEnv naming the pin method): it lowers RLIMIT_MEMLOCK, which needs no
// privilege, and checks that registrations beyond it fail with verbs.ErrMemlock and
// that deregistering gives the budget back. A process with CAP_IPC_LOCK (root) is
// exempt from the limit, so the child first drops that capability from its bounding
// set and executes itself again, which leaves it out of every thread's sets.
const (
	memlockChildEnv  = "SOFT_MEMLOCK_CHILD"
	memlockStageEnv  = "SOFT_MEMLOCK_STAGE"
	memlockTestLimit = 4 << 20
	memlockChunk     = 1 << 20
)

func TestMemlockLimit(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, method := range []string{PinIOUring, PinMlock} {
		t.Run(method, func(t *testing.T) {
			cmd := exec.Command(exe, "-test.run=^$")
			cmd.Env = append(os.Environ(), memlockChildEnv+"="+method, pinEnv+"="+method)
			if g := os.Getenv("GORACE"); !strings.Contains(g, "atexit_sleep_ms") {
				cmd.Env = append(cmd.Env, "GORACE="+strings.TrimSpace(g+" atexit_sleep_ms=100"))
			}
			out, err := cmd.CombinedOutput()
			text := string(out)
			if i := strings.Index(text, "skip: "); i >= 0 && err == nil {
				t.Skip(strings.TrimSpace(text[i:]))
			}
			if err != nil || !strings.Contains(text, "ok ") || strings.Contains(text, "DATA RACE") {
				t.Fatalf("child (%v):\n%s", err, text)
			}
			t.Log(strings.TrimSpace(text))
		})
	}
}

// hasCap reports whether capability c is in this thread's effective set.
func hasCap(c uint) bool {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return false
	}
	return data[c/32].Effective&(1<<(c%32)) != 0
}

// runMemlockChild is the child's side of TestMemlockLimit. It prints "ok ...",
// "skip: ..." or "fail: ..." and returns the exit status.
func runMemlockChild(method string) int {
	if strings.HasPrefix(method, holderPrefix) {
		return runPinHolder(strings.TrimPrefix(method, holderPrefix))
	}
	if os.Getenv(memlockStageEnv) == "" && hasCap(unix.CAP_IPC_LOCK) {
		runtime.LockOSThread() // the bounding set is per thread: exec from this one
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, unix.CAP_IPC_LOCK, 0, 0, 0); err != nil {
			fmt.Println("skip: cannot drop CAP_IPC_LOCK, so RLIMIT_MEMLOCK does not apply:", err)
			return 0
		}
		exe, err := os.Executable()
		if err != nil {
			fmt.Println("fail:", err)
			return 1
		}
		err = syscall.Exec(exe, os.Args, append(os.Environ(), memlockStageEnv+"=1"))
		fmt.Println("fail: exec:", err)
		return 1
	}
	if hasCap(unix.CAP_IPC_LOCK) {
		fmt.Println("skip: CAP_IPC_LOCK is still effective")
		return 0
	}
	if err := memlockScenario(method); err != nil {
		fmt.Println("fail:", err)
		return 1
	}
	return 0
}

func memlockScenario(method string) error {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_MEMLOCK, &rl); err != nil {
		return err
	}
	lim := min(uint64(memlockTestLimit), rl.Cur)
	if err := unix.Setrlimit(unix.RLIMIT_MEMLOCK, &unix.Rlimit{Cur: lim, Max: min(lim, rl.Max)}); err != nil {
		return fmt.Errorf("lowering RLIMIT_MEMLOCK to %d: %w", lim, err)
	}
	if lim < 2*memlockChunk {
		fmt.Printf("skip: RLIMIT_MEMLOCK is %d bytes, too small to test\n", lim)
		return nil
	}
	// Several slots per region, so a refusal in the middle of one must undo the
	// slots already installed.
	uringSlotMax = 256 << 10
	c, err := Open()
	if err != nil {
		return err
	}
	defer c.Close()
	if got := c.PinMethod(); got != method {
		return fmt.Errorf("PinMethod %q (%s), want %q", got, c.pinWhy, method)
	}
	pd, err := c.AllocPD()
	if err != nil {
		return err
	}
	n := int(lim/memlockChunk) + 2
	bufs := make([][]byte, n)
	for i := range bufs {
		b, err := unix.Mmap(-1, 0, memlockChunk, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
		if err != nil {
			return err
		}
		for j := 0; j < len(b); j += pageSize {
			b[j] = 1
		}
		bufs[i] = b
	}
	// fill registers chunks until one is refused; it returns the regions.
	fill := func() ([]verbs.MR, error) {
		var regs []verbs.MR
		for _, b := range bufs {
			m, err := pd.RegMR(b, rw)
			if err != nil {
				if !errors.Is(err, verbs.ErrMemlock) {
					return regs, fmt.Errorf("refusal is %v, want ErrMemlock", err)
				}
				return regs, nil
			}
			regs = append(regs, m)
		}
		return regs, fmt.Errorf("registered %d MiB under a limit of %d bytes", len(regs), lim)
	}
	deregAll := func(regs []verbs.MR) error {
		for _, m := range regs {
			if err := m.Dereg(); err != nil {
				return err
			}
		}
		return nil
	}
	regs, err := fill()
	if err != nil {
		return err
	}
	k := len(regs)
	if uint64(k)*memlockChunk > lim || k < int(lim/memlockChunk)-1 {
		return fmt.Errorf("%d MiB registered under a limit of %d bytes", k, lim)
	}
	// One region deregistered makes room for exactly one again.
	if err := regs[k-1].Dereg(); err != nil {
		return err
	}
	if regs[k-1], err = pd.RegMR(bufs[k-1], rw); err != nil {
		return fmt.Errorf("re-registering after a Dereg: %w", err)
	}
	if m, err := pd.RegMR(bufs[k], rw); !errors.Is(err, verbs.ErrMemlock) {
		if err == nil {
			m.Dereg()
		}
		return fmt.Errorf("one more region after the refill: %v, want ErrMemlock", err)
	}
	if err := deregAll(regs); err != nil {
		return err
	}
	// A region larger than the whole budget is refused and leaves nothing pinned.
	big, err := unix.Mmap(-1, 0, int(lim)+memlockChunk, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return err
	}
	defer unix.Munmap(big)
	if m, err := pd.RegMR(big, rw); !errors.Is(err, verbs.ErrMemlock) {
		if err == nil {
			m.Dereg()
		}
		return fmt.Errorf("a region beyond the limit: %v, want ErrMemlock", err)
	}
	regs2, err := fill()
	if err != nil {
		return fmt.Errorf("after deregistering all: %w", err)
	}
	if len(regs2) != k {
		return fmt.Errorf("%d MiB fit after deregistering all, %d before: budget lost", len(regs2), k)
	}
	if err := deregAll(regs2); err != nil {
		return err
	}
	shared := ""
	if method == PinIOUring {
		if err := sharedUserBudget(pd, lim); err != nil {
			return err
		}
		shared = "; a region fits beside another process's pins of the same user"
	}
	fmt.Printf("ok %s: %d MiB fit under RLIMIT_MEMLOCK %d KiB; the next was ErrMemlock; Dereg gave the budget back%s\n",
		method, k, lim>>10, shared)
	return nil
}

// holderPrefix starts the memlockChildEnv value of a process that pins a region and
// holds it until its standard input closes.
const holderPrefix = "holder:"

// sharedUserBudget: io_uring charges a user, not a process. Another process of the
// same user holds lim-1 MiB pinned; a 2 MiB region still fits this process's own
// limit, as it would under an HCA's per-process count, and must register.
func sharedUserBudget(pd verbs.PD, lim uint64) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	holder := exec.Command(exe, "-test.run=^$")
	holder.Env = append(os.Environ(), fmt.Sprintf("%s=%s%d", memlockChildEnv, holderPrefix, lim-memlockChunk))
	in, err := holder.StdinPipe()
	if err != nil {
		return err
	}
	out, err := holder.StdoutPipe()
	if err != nil {
		return err
	}
	holder.Stderr = os.Stderr
	if err := holder.Start(); err != nil {
		return err
	}
	defer func() {
		in.Close()
		holder.Wait()
	}()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "held") {
		return fmt.Errorf("pin holder: %q, %v", line, err)
	}
	b, err := unix.Mmap(-1, 0, 2*memlockChunk, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return err
	}
	defer unix.Munmap(b)
	m, err := pd.RegMR(b, rw)
	if err != nil {
		return fmt.Errorf("2 MiB beside another process's %d KiB under a %d KiB limit: %w",
			(lim-memlockChunk)>>10, lim>>10, err)
	}
	return m.Dereg()
}

// runPinHolder pins n bytes (a decimal count) through io_uring, prints "held" and
// waits for its standard input to close.
func runPinHolder(n string) int {
	size, err := strconv.Atoi(n)
	if err != nil {
		fmt.Println("fail:", err)
		return 1
	}
	c, err := Open()
	if err != nil {
		fmt.Println("fail:", err)
		return 1
	}
	defer c.Close()
	pd, err := c.AllocPD()
	if err != nil {
		fmt.Println("fail:", err)
		return 1
	}
	b := make([]byte, size)
	m, err := pd.RegMR(b, rw)
	if err != nil {
		fmt.Println("fail: holder:", err)
		return 1
	}
	fmt.Println("held")
	io.Copy(io.Discard, os.Stdin)
	m.Dereg()
	return 0
}

// memlockRoom is how many bytes this process may pin: unlimited with CAP_IPC_LOCK,
// else RLIMIT_MEMLOCK (8 MiB for an ordinary user here). Tests that register big
// regions size them by it, as they would on an HCA.
func memlockRoom() uint64 {
	if hasCap(unix.CAP_IPC_LOCK) {
		return 1 << 62
	}
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_MEMLOCK, &rl); err != nil {
		return 0
	}
	return rl.Cur
}
