//go:build linux && cgo

package driverhooks

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/goportals/goportals/internal/bootstrap/childtest"
	"golang.org/x/sys/unix"
)

// The seccomp filter cannot be removed once installed, so every test that installs it
// runs in a child: the test binary re-executed to run TestSeccompChild alone, with
// seccompChildEnv naming a role. The child exits with the role's status (os.Exit
// inside the test, before the leak check of TestMain); the parent judges it by that
// status and its output (childtest.Check) and reads the figures it prints
// ("figure name=value"). The role runs inside a test rather than from init so that
// every backend's init has registered its opener.

const seccompChildEnv = "PTL_SECCOMP_CHILD"

// errSkip makes a child exit with seccompSkipStatus: the parent then skips.
var errSkip = errors.New("skip")

const seccompSkipStatus = 3

var seccompRoles = map[string]func() error{
	"events":           childSeccompEvents,
	"cost":             childSeccompCost,
	"cost-nosync":      childSeccompCostNoSync,
	"scavenger":        childSeccompScavenger,
	"crossthread":      func() error { return childCrossThread(KindSeccomp) },
	"crossthread-uffd": func() error { return childCrossThread(KindUffd) },
	"auto":             childSeccompAuto,
	"munmap-loop":      childMunmapLoop,
	"orphan-parent":    childOrphanParent,
	"orphan":           childOrphan,
	"nested-open":      childNestedOpen,
}

// TestSeccompChild is the body of a child process; without seccompChildEnv it does
// nothing.
func TestSeccompChild(t *testing.T) {
	role := os.Getenv(seccompChildEnv)
	if role == "" {
		return
	}
	f, ok := seccompRoles[role]
	if !ok {
		fmt.Fprintf(os.Stderr, "unknown seccomp child role %q\n", role)
		os.Exit(2)
	}
	err := f()
	switch {
	case errors.Is(err, errSkip):
		fmt.Printf("skip: %v\n", err)
		os.Exit(seccompSkipStatus)
	case err != nil:
		fmt.Printf("FAIL: %v\n", err)
		os.Exit(1)
	}
	fmt.Println("ok")
	os.Exit(0)
}

// childCmd returns the command that runs this binary in role.
func childCmd(ctx context.Context, role string, env ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestSeccompChild$", "-test.count=1")
	cmd.Env = append(append(os.Environ(), seccompChildEnv+"="+role, "GORACE=atexit_sleep_ms=0"), env...)
	return cmd
}

// figure prints a measurement for the parent.
func figure(name string, format string, args ...any) {
	fmt.Printf("figure %s=%s\n", name, fmt.Sprintf(format, args...))
}

// runSeccompChild runs this binary in role and returns its output; it fails the test
// unless the child exits 0 with clean output, and skips when the child skips.
func runSeccompChild(t *testing.T, role string, env ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := childCmd(ctx, role, env...)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("run seccomp child %s: %v", role, err)
	}
	status := cmd.ProcessState.ExitCode()
	if status == seccompSkipStatus {
		t.Skipf("seccomp child %s: %s", role, strings.TrimSpace(out.String()))
	}
	if ctx.Err() != nil {
		t.Fatalf("seccomp child %s killed after 4 minutes (deadlock?); output:\n%s%s", role, out.String(), errOut.String())
	}
	if err := childtest.Check("seccomp child "+role, status, 0, out.String(), errOut.String()); err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(l, "figure ") {
			t.Log(strings.TrimPrefix(l, "figure "))
		}
	}
	return out.String()
}

// openSeccompChild opens the backend in a child, turning "not supported" into a skip.
func openSeccompChild() (*Seccomp, error) {
	s, err := OpenSeccomp()
	if errors.Is(err, ErrNotSupported) {
		return nil, fmt.Errorf("%w: %v", errSkip, err)
	}
	return s, err
}

func rawMmap(addr, length uintptr, prot, flags int) (uintptr, error) {
	p, _, e := unix.Syscall6(unix.SYS_MMAP, addr, length, uintptr(prot), uintptr(flags), ^uintptr(0), 0)
	if e != 0 {
		return 0, e
	}
	return p, nil
}

func rawMunmap(addr, length uintptr) error {
	if _, _, e := unix.Syscall(unix.SYS_MUNMAP, addr, length, 0); e != 0 {
		return e
	}
	return nil
}

func rawMadvise(addr, length uintptr, advice int) error {
	if _, _, e := unix.Syscall(unix.SYS_MADVISE, addr, length, uintptr(advice)); e != 0 {
		return e
	}
	return nil
}

// poke stores v at addr, memory this test mapped outside the Go heap.
func poke(addr uintptr, v byte) { *(*byte)(unsafe.Add(unsafe.Pointer(nil), addr)) = v }

func anonPages(pages int, flags int) (uintptr, error) {
	p, err := rawMmap(0, uintptr(pages)*pageSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANONYMOUS|flags)
	if err != nil {
		return 0, err
	}
	for i := 0; i < pages; i++ {
		poke(p+uintptr(i)*pageSize, 1)
	}
	return p, nil
}

// TestSeccompEvents: every call the filter stops is reported before it returns, with
// its range (or as "everything" when the range is not in the arguments), and the
// calls it lets through are not.
func TestSeccompEvents(t *testing.T) { runSeccompChild(t, "events") }

func childSeccompEvents() error {
	sc, err := openSeccompChild()
	if err != nil {
		return err
	}
	if st := sc.Stats(); !st.SyncWakeUp {
		fmt.Printf("note: SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP refused: %v\n", unix.Errno(st.SyncErrno))
	}
	n := NewNotifier(sc)
	if n.Kind() != KindSeccomp || sc.Window() || !strings.HasPrefix(n.Guarantee(), "no window") {
		return fmt.Errorf("kind %q window %v guarantee %q", n.Kind(), sc.Window(), n.Guarantee())
	}
	s := n.Subscribe()
	defer s.Close()
	ps := pageSize
	// Unmapping what a change mapped is itself reported, so it waits until the
	// change has been checked.
	var cleanups []func()
	later := func(f func()) { cleanups = append(cleanups, f) }
	type change struct {
		name string
		// do makes the change and returns the range that must be reported; flush
		// means "everything" must be.
		do    func() (lo, hi uintptr, flush bool, err error)
		quiet bool // the range must not be reported
	}
	changes := []change{
		{name: "munmap", do: func() (uintptr, uintptr, bool, error) {
			p, err := anonPages(4, unix.MAP_PRIVATE)
			if err != nil {
				return 0, 0, false, err
			}
			return p, p + 4*ps, false, rawMunmap(p, 4*ps)
		}},
		{name: "partial-munmap-unaligned-length", do: func() (uintptr, uintptr, bool, error) {
			p, err := anonPages(4, unix.MAP_PRIVATE)
			if err != nil {
				return 0, 0, false, err
			}
			later(func() { rawMunmap(p, 4*ps) })
			return p + ps, p + 2*ps, false, rawMunmap(p+ps, ps/2)
		}},
		{name: "madvise-dontneed", do: madviseChange(later, unix.MAP_PRIVATE, unix.MADV_DONTNEED)},
		{name: "madvise-free", do: madviseChange(later, unix.MAP_PRIVATE, unix.MADV_FREE)},
		{name: "madvise-remove", do: madviseChange(later, unix.MAP_SHARED, unix.MADV_REMOVE)},
		{name: "madvise-pageout", do: madviseChange(later, unix.MAP_PRIVATE, unix.MADV_PAGEOUT)},
		{name: "madvise-willneed", do: madviseChange(later, unix.MAP_PRIVATE, unix.MADV_WILLNEED), quiet: true},
		{name: "madvise-nohugepage", do: madviseChange(later, unix.MAP_PRIVATE, unix.MADV_NOHUGEPAGE), quiet: true},
		{name: "mremap-move", do: func() (uintptr, uintptr, bool, error) {
			p, err := anonPages(2, unix.MAP_PRIVATE)
			if err != nil {
				return 0, 0, false, err
			}
			q, _, e := unix.Syscall6(unix.SYS_MREMAP, p, 2*ps, 64*ps, unix.MREMAP_MAYMOVE, 0, 0)
			if e != 0 {
				return 0, 0, false, e
			}
			rawMunmap(q, 64*ps)
			return p, p + 2*ps, false, nil
		}},
		{name: "mremap-fixed-target", do: func() (uintptr, uintptr, bool, error) {
			p, err := anonPages(2, unix.MAP_PRIVATE)
			if err != nil {
				return 0, 0, false, err
			}
			dst, err := anonPages(8, unix.MAP_PRIVATE)
			if err != nil {
				return 0, 0, false, err
			}
			tgt := dst + 4*ps
			q, _, e := unix.Syscall6(unix.SYS_MREMAP, p, 2*ps, 2*ps, unix.MREMAP_MAYMOVE|unix.MREMAP_FIXED, tgt, 0)
			if e != 0 || q != tgt {
				return 0, 0, false, fmt.Errorf("mremap to %#x: %#x %v", tgt, q, e)
			}
			rawMunmap(dst, 8*ps)
			return tgt, tgt + 2*ps, false, nil
		}},
		{name: "mmap-fixed", do: func() (uintptr, uintptr, bool, error) {
			p, err := anonPages(4, unix.MAP_PRIVATE)
			if err != nil {
				return 0, 0, false, err
			}
			later(func() { rawMunmap(p, 4*ps) })
			q, err := rawMmap(p+ps, ps, unix.PROT_READ, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_FIXED)
			if err == nil && q != p+ps {
				err = fmt.Errorf("MAP_FIXED at %#x returned %#x", p+ps, q)
			}
			return p + ps, p + 2*ps, false, err
		}},
		{name: "mmap-no-fixed", quiet: true, do: func() (uintptr, uintptr, bool, error) {
			p, err := rawMmap(0, 4*ps, unix.PROT_READ, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
			if err != nil {
				return 0, 0, false, err
			}
			// Unmapping it later is reported, so leave it mapped.
			return p, p + 4*ps, false, nil
		}},
		{name: "brk-shrink", do: func() (uintptr, uintptr, bool, error) {
			cur, _, _ := unix.Syscall(unix.SYS_BRK, 0, 0, 0)
			up, _, _ := unix.Syscall(unix.SYS_BRK, cur+8*ps, 0, 0)
			if up != cur+8*ps {
				return 0, 0, false, fmt.Errorf("brk(%#x) = %#x", cur+8*ps, up)
			}
			for a := (cur + ps - 1) &^ (ps - 1); a+ps <= up; a += ps {
				poke(a, 1)
			}
			back, _, _ := unix.Syscall(unix.SYS_BRK, cur, 0, 0)
			if back != cur {
				return 0, 0, false, fmt.Errorf("brk back to %#x = %#x", cur, back)
			}
			lo := (cur + ps - 1) &^ (ps - 1)
			return lo, lo + ps, false, nil
		}},
		{name: "shmdt", do: func() (uintptr, uintptr, bool, error) {
			id, _, e := unix.Syscall(unix.SYS_SHMGET, unix.IPC_PRIVATE, ps, unix.IPC_CREAT|0o600)
			if e != 0 {
				return 0, 0, false, e
			}
			defer unix.Syscall(unix.SYS_SHMCTL, id, unix.IPC_RMID, 0)
			p, _, e := unix.Syscall(unix.SYS_SHMAT, id, 0, 0)
			if e != 0 {
				return 0, 0, false, e
			}
			if _, _, e := unix.Syscall(unix.SYS_SHMDT, p, 0, 0); e != 0 {
				return 0, 0, false, e
			}
			return p, p + ps, true, nil
		}},
		{name: "shmat-remap", do: func() (uintptr, uintptr, bool, error) {
			id, _, e := unix.Syscall(unix.SYS_SHMGET, unix.IPC_PRIVATE, ps, unix.IPC_CREAT|0o600)
			if e != 0 {
				return 0, 0, false, e
			}
			defer unix.Syscall(unix.SYS_SHMCTL, id, unix.IPC_RMID, 0)
			p, err := anonPages(1, unix.MAP_PRIVATE)
			if err != nil {
				return 0, 0, false, err
			}
			q, _, e := unix.Syscall(unix.SYS_SHMAT, id, p, 0o40000 /* SHM_REMAP */)
			if e != 0 || q != p {
				return 0, 0, false, fmt.Errorf("shmat(SHM_REMAP) at %#x: %#x %v", p, q, e)
			}
			// Flush first so that the shmdt below is not what the check sees.
			return p, p + ps, true, nil
		}},
		{name: "process_madvise-pageout", do: func() (uintptr, uintptr, bool, error) {
			p, err := anonPages(2, unix.MAP_PRIVATE)
			if err != nil {
				return 0, 0, false, err
			}
			later(func() { rawMunmap(p, 2*ps) })
			pidfd, err := unix.PidfdOpen(os.Getpid(), 0)
			if err != nil {
				return 0, 0, false, fmt.Errorf("%w: pidfd_open: %v", errSkip, err)
			}
			defer unix.Close(pidfd)
			iov := unix.Iovec{Base: (*byte)(unsafe.Add(unsafe.Pointer(nil), p)), Len: uint64(2 * ps)}
			_, _, e := unix.Syscall6(unix.SYS_PROCESS_MADVISE, uintptr(pidfd), uintptr(unsafe.Pointer(&iov)), 1, unix.MADV_PAGEOUT, 0, 0)
			runtime.KeepAlive(&iov)
			if e != 0 && e != unix.EINVAL && e != unix.EPERM && e != unix.ENOSYS {
				return 0, 0, false, e
			}
			return p, p + 2*ps, true, nil
		}},
	}
	for _, c := range changes {
		// Start clean: whatever the runtime did so far is drained.
		s.Drain(func(a, b uintptr) {})
		before := sc.Stats()
		lo, hi, flush, err := c.do()
		if errors.Is(err, errSkip) {
			fmt.Printf("note: %s skipped: %v\n", c.name, err)
			continue
		}
		if err != nil {
			return fmt.Errorf("%s: %v", c.name, err)
		}
		pending := s.Pending()
		var got []span
		all := s.Drain(func(a, b uintptr) { got = append(got, span{a, b}) })
		hit := overlaps(got, lo, hi)
		everything := overlaps(got, 0, 1) && overlaps(got, ^uintptr(0)-1, ^uintptr(0))
		switch {
		case c.quiet && hit:
			return fmt.Errorf("%s: [%#x,%#x) was reported (%v)", c.name, lo, hi, got)
		case c.quiet:
		case !pending:
			return fmt.Errorf("%s returned but the subscription is not pending", c.name)
		case all:
			return fmt.Errorf("%s: the ring overflowed or the handle closed", c.name)
		case flush && !everything:
			return fmt.Errorf("%s: want everything flushed, drained %v", c.name, got)
		case !hit:
			return fmt.Errorf("%s: drained %v, want a range overlapping [%#x,%#x)", c.name, got, lo, hi)
		}
		if after := sc.Stats(); !c.quiet && after.Notifications == before.Notifications {
			return fmt.Errorf("%s: no notification counted (%+v)", c.name, after)
		}
		if c.name == "shmat-remap" {
			unix.Syscall(unix.SYS_SHMDT, lo, 0, 0)
		}
		for _, f := range cleanups {
			f()
		}
		cleanups = cleanups[:0]
	}
	// A child process inherits the filter; this process's supervisor lets its calls
	// run without recording them.
	before := sc.Stats().Foreign
	const loops = 200
	cmd := childCmd(context.Background(), "munmap-loop", fmt.Sprintf("PTL_SECCOMP_LOOPS=%d", loops))
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("a child started under the filter: %v\n%s", err, out)
	}
	if d := sc.Stats().Foreign - before; d < loops {
		return fmt.Errorf("a child's %d munmaps reached the supervisor as foreign calls %d times: the filter is not inherited?", loops, d)
	} else {
		figure("child-munmaps-answered", "%d", d)
	}
	// Nor can such a child open its own supervisor: one listener per filter chain.
	out, err := childCmd(context.Background(), "nested-open").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "nested open: EBUSY") {
		return fmt.Errorf("a child of the supervisor's process opening its own (%v):\n%s", err, out)
	}
	// Closing a handle: subscriptions flush, Watch fails, the supervisor still answers.
	p, err := anonPages(2, unix.MAP_PRIVATE)
	if err != nil {
		return err
	}
	if err := n.Watch(p, 2*ps); err != nil {
		return fmt.Errorf("watch: %v", err)
	}
	if w := sc.Stats().Watched; w != 1 {
		return fmt.Errorf("%d ranges watched, want 1", w)
	}
	hole, err := anonPages(3, unix.MAP_PRIVATE)
	if err != nil {
		return err
	}
	rawMunmap(hole+ps, ps)
	if err := n.Watch(hole, 3*ps); !errors.Is(err, ErrNotMapped) {
		return fmt.Errorf("watching a range with a hole: %v, want ErrNotMapped", err)
	}
	rawMunmap(hole, 3*ps)
	if err := n.Unwatch(p, 2*ps); err != nil {
		return err
	}
	second, err := OpenSeccomp()
	if err != nil {
		return fmt.Errorf("a second handle: %v", err)
	}
	s2 := NewNotifier(second).Subscribe()
	defer s2.Close()
	sc.Close()
	if !s.Pending() {
		return errors.New("closing the handle did not make its subscription pending")
	}
	if all := s.Drain(func(a, b uintptr) {}); !all {
		return errors.New("a subscription of a closed handle must flush everything")
	}
	if err := n.Watch(p, 2*ps); !errors.Is(err, ErrClosed) {
		return fmt.Errorf("watch after close: %v, want ErrClosed", err)
	}
	s2.Drain(func(a, b uintptr) {})
	if err := rawMunmap(p, 2*ps); err != nil {
		return fmt.Errorf("munmap after close: %v", err)
	}
	var got []span
	if s2.Drain(func(a, b uintptr) { got = append(got, span{a, b}) }) || !overlaps(got, p, p+2*ps) {
		return fmt.Errorf("the other handle missed a munmap after the first closed: %v", got)
	}
	if st := sc.Stats(); st.Errors != 0 {
		return fmt.Errorf("supervisor errors: %+v (%v)", st, unix.Errno(st.LastErrno))
	}
	return nil
}

// madviseChange maps pages with flags and applies advice to two of them; later
// unmaps them once the change is checked.
func madviseChange(later func(func()), flags, advice int) func() (uintptr, uintptr, bool, error) {
	return func() (uintptr, uintptr, bool, error) {
		p, err := anonPages(4, flags)
		if err != nil {
			return 0, 0, false, err
		}
		later(func() { rawMunmap(p, 4*pageSize) })
		err = rawMadvise(p+pageSize, 2*pageSize, advice)
		if errors.Is(err, unix.EINVAL) {
			return 0, 0, false, fmt.Errorf("%w: madvise(%d): %v", errSkip, advice, err)
		}
		return p + pageSize, p + 3*pageSize, false, err
	}
}

// childMunmapLoop maps and unmaps PTL_SECCOMP_LOOPS times (run under an inherited
// filter).
func childMunmapLoop() error {
	var loops int
	fmt.Sscan(os.Getenv("PTL_SECCOMP_LOOPS"), &loops)
	for i := 0; i < loops; i++ {
		p, err := rawMmap(0, 2*pageSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
		if err != nil {
			return err
		}
		if err := rawMunmap(p, 2*pageSize); err != nil {
			return err
		}
	}
	return nil
}

// TestSeccompCost measures mmap+munmap of 8 KiB with and without the filter, a call
// the filter lets through, and Pending.
func TestSeccompCost(t *testing.T) {
	if testing.Short() {
		t.Skip("measurement")
	}
	runSeccompChild(t, "cost")
}

// TestSeccompCostWithoutSyncWakeUp measures the same without
// SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP (what the flag saves).
func TestSeccompCostWithoutSyncWakeUp(t *testing.T) {
	if testing.Short() {
		t.Skip("measurement")
	}
	runSeccompChild(t, "cost-nosync")
}

const costLoops = 20000

// mmapMunmapCost returns the best of three runs of loops mmap+munmap of 8 KiB.
func mmapMunmapCost(loops int) (time.Duration, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	best := time.Duration(1 << 62)
	for r := 0; r < 3; r++ {
		start := time.Now()
		for i := 0; i < loops; i++ {
			p, err := rawMmap(0, 8192, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
			if err != nil {
				return 0, err
			}
			if err := rawMunmap(p, 8192); err != nil {
				return 0, err
			}
		}
		if d := time.Since(start) / time.Duration(loops); d < best {
			best = d
		}
	}
	return best, nil
}

func getppidCost(loops int) time.Duration {
	start := time.Now()
	for i := 0; i < loops; i++ {
		unix.Syscall(unix.SYS_GETPPID, 0, 0, 0)
	}
	return time.Since(start) / time.Duration(loops)
}

func childSeccompCost() error { return seccompCost(false) }

func childSeccompCostNoSync() error { return seccompCost(true) }

func seccompCost(noSync bool) error {
	plain, err := mmapMunmapCost(costLoops)
	if err != nil {
		return err
	}
	getppidCost(100000) // warm up
	plainPPID := getppidCost(100000)
	if noSync {
		seccompSkipSyncWakeUp()
	}
	sc, err := openSeccompChild()
	if err != nil {
		return err
	}
	st0 := sc.Stats()
	if noSync == st0.SyncWakeUp {
		return fmt.Errorf("SyncWakeUp %v with noSync %v (errno %v)", st0.SyncWakeUp, noSync, unix.Errno(st0.SyncErrno))
	}
	loops := costLoops
	if noSync {
		loops = 500 // about 200 us each
	}
	filtered, err := mmapMunmapCost(loops)
	if err != nil {
		return err
	}
	filteredPPID := getppidCost(100000)
	st := sc.Stats()
	if d := st.Munmap - st0.Munmap; d < uint64(3*loops) {
		return fmt.Errorf("%d munmaps notified, want at least %d", d, 3*loops)
	}
	tag := "sync-wake-up"
	if noSync {
		tag = "no-sync-wake-up"
	}
	figure("mmap+munmap-8KiB-plain", "%v", plain)
	figure("mmap+munmap-8KiB-seccomp-"+tag, "%v", filtered)
	figure("per-munmap-overhead-"+tag, "%v", filtered-plain)
	figure("getppid-plain", "%v", plainPPID)
	figure("getppid-under-filter", "%v", filteredPPID)
	if !noSync {
		sub := NewNotifier(sc).Subscribe()
		defer sub.Close()
		sub.Drain(func(a, b uintptr) {})
		const n = 1 << 22
		start := time.Now()
		p := 0
		for i := 0; i < n; i++ {
			if sub.Pending() {
				p++
			}
		}
		figure("pending", "%.2fns (%d of %d pending)", float64(time.Since(start))/n, p, n)
	}
	return nil
}

// TestSeccompScavenger counts the notifications the Go runtime's own memory
// management causes (scavenger madvise, heap growth with MAP_FIXED) under a GC-heavy
// loop, and checks that a scavenger's madvise holding the only P (GOMAXPROCS=1) does
// not deadlock.
func TestSeccompScavenger(t *testing.T) { runSeccompChild(t, "scavenger") }

// gcChurn allocates and drops rounds of 4 MiB, forcing a GC each round and returning
// memory to the OS every tenth.
func gcChurn(rounds int, release bool) time.Duration {
	start := time.Now()
	var keep [][]byte
	for i := 0; i < rounds; i++ {
		b := make([]byte, 4<<20)
		for j := 0; j < len(b); j += 4096 {
			b[j] = byte(i)
		}
		keep = append(keep, b)
		if len(keep) > 4 {
			keep = keep[1:]
		}
		runtime.GC()
		if release && i%10 == 9 {
			debug.FreeOSMemory()
		}
	}
	runtime.KeepAlive(keep)
	return time.Since(start)
}

func childSeccompScavenger() error {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	const rounds = 200
	plain := gcChurn(rounds, true)
	sc, err := openSeccompChild()
	if err != nil {
		return err
	}
	s := NewNotifier(sc).Subscribe()
	defer s.Close()
	st0 := sc.Stats()
	done := make(chan time.Duration, 1)
	go func() { done <- gcChurn(rounds, true) }()
	var filtered time.Duration
	select {
	case filtered = <-done:
	case <-time.After(2 * time.Minute):
		return errors.New("watchdog: GC churn under the filter with GOMAXPROCS=1 did not finish in 2 minutes (deadlock)")
	}
	st := sc.Stats()
	d := func(a, b uint64) uint64 { return a - b }
	notifs := d(st.Notifications, st0.Notifications)
	figure("gc-churn-plain", "%v", plain)
	figure("gc-churn-seccomp", "%v", filtered)
	figure("gc-churn-notifications", "%d in %d GCs and %d FreeOSMemory (madvise %d, mmap-fixed %d, munmap %d, mremap %d, brk %d, other %d)",
		notifs, rounds, rounds/10, d(st.Madvise, st0.Madvise), d(st.MmapFixed, st0.MmapFixed), d(st.Munmap, st0.Munmap),
		d(st.Mremap, st0.Mremap), d(st.Brk, st0.Brk), d(st.Other, st0.Other)+d(st.Shm, st0.Shm))
	if d(st.Madvise, st0.Madvise) == 0 {
		return fmt.Errorf("FreeOSMemory under the filter caused no madvise notification: the scavenger path was not exercised (%+v)", st)
	}
	// The background scavenger alone, without FreeOSMemory or forced GCs.
	runtime.GOMAXPROCS(2)
	st1 := sc.Stats()
	start := time.Now()
	var sink [][]byte
	for time.Since(start) < time.Second {
		sink = append(sink, make([]byte, 256<<10))
		if len(sink) > 64 {
			sink = sink[:0]
		}
	}
	runtime.KeepAlive(sink)
	time.Sleep(200 * time.Millisecond)
	st2 := sc.Stats()
	figure("background-1s-notifications", "%d (madvise %d, mmap-fixed %d, munmap %d) in %d GCs",
		d(st2.Notifications, st1.Notifications), d(st2.Madvise, st1.Madvise), d(st2.MmapFixed, st1.MmapFixed),
		d(st2.Munmap, st1.Munmap), gcCount())
	if st2.Errors != 0 {
		return fmt.Errorf("supervisor errors: %+v", st2)
	}
	return nil
}

func gcCount() uint32 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.NumGC
}

// TestSeccompCrossThread is the userfaultfd window made into a test:
// three OS-locked threads; B munmaps a watched range, C maps new memory at the same
// address as soon as it can (MAP_FIXED_NOREPLACE, which the filter lets through) and
// tells A, A then asks the subscription. With no window A must always find the
// change (Pending true and a drained range over the address): 0 missed.
func TestSeccompCrossThread(t *testing.T) {
	out := runSeccompChild(t, "crossthread")
	if !strings.Contains(out, "missed=0 ") {
		t.Fatalf("missed changes under the seccomp backend:\n%s", out)
	}
}

// TestUffdCrossThread runs the same with the userfaultfd monitor for comparison; it
// reports what it sees and fails only if the harness itself breaks.
func TestUffdCrossThread(t *testing.T) {
	if testing.Short() {
		t.Skip("measurement")
	}
	runSeccompChild(t, "crossthread-uffd")
}

func childCrossThread(k Kind) error {
	b, err := OpenBackend(k)
	if errors.Is(err, ErrNotSupported) {
		return fmt.Errorf("%w: %v", errSkip, err)
	}
	if err != nil {
		return err
	}
	defer b.Close()
	n := NewNotifier(b)
	sub := n.Subscribe()
	defer sub.Close()
	iters := 2000
	if k == KindUffd {
		iters = 1000
	}
	if childtest.RaceEnabled {
		iters /= 4
	}
	var (
		gen                                                         atomic.Int64 // iteration released to the threads
		done                                                        atomic.Int64 // threads finished with the iteration
		mapped, returned                                            atomic.Bool
		addr                                                        atomic.Uintptr
		missed, pendingNotOverlap, mappedBeforeReturn, notifiedLate int
		threadErr                                                   error
		errMu                                                       sync.Mutex
	)
	fail := func(err error) {
		errMu.Lock()
		if threadErr == nil {
			threadErr = err
		}
		errMu.Unlock()
	}
	wait := func(i int64) {
		for j := 0; gen.Load() != i; j++ {
			if j > 1000 {
				runtime.Gosched()
			}
		}
	}
	ps := pageSize
	var wg sync.WaitGroup
	wg.Add(3)
	go func() { // B: unmaps
		defer wg.Done()
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		for i := int64(1); i <= int64(iters); i++ {
			wait(i)
			if err := rawMunmap(addr.Load(), ps); err != nil {
				fail(fmt.Errorf("B munmap: %v", err))
			}
			returned.Store(true)
			done.Add(1)
		}
	}()
	go func() { // C: maps new memory at the address as soon as it is free
		defer wg.Done()
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		for i := int64(1); i <= int64(iters); i++ {
			wait(i)
			a := addr.Load()
			for {
				p, err := rawMmap(a, ps, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_FIXED_NOREPLACE)
				if err == nil && p == a {
					break
				}
				if err == nil {
					rawMunmap(p, ps) // an old kernel that takes NOREPLACE as a hint
					fail(fmt.Errorf("%w: MAP_FIXED_NOREPLACE mapped elsewhere", errSkip))
					break
				}
				if err != unix.EEXIST {
					fail(fmt.Errorf("C mmap: %v", err))
					break
				}
			}
			poke(a, 2)
			mapped.Store(true)
			done.Add(1)
		}
	}()
	go func() { // A: looks up after C says the address holds new memory
		defer wg.Done()
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		for i := int64(1); i <= int64(iters); i++ {
			wait(i)
			for j := 0; !mapped.Load(); j++ {
				if j > 1000 {
					runtime.Gosched()
				}
			}
			early := !returned.Load()
			a := addr.Load()
			if early {
				mappedBeforeReturn++
			}
			if !sub.Pending() {
				missed++
			} else {
				var got []span
				all := sub.Drain(func(s, e uintptr) { got = append(got, span{s, e}) })
				if !all && !overlaps(got, a, a+ps) {
					pendingNotOverlap++
					missed++
				}
			}
			done.Add(1)
		}
	}()
	for i := 1; i <= iters; i++ {
		p, err := anonPages(1, unix.MAP_PRIVATE)
		if err != nil {
			return err
		}
		if err := n.Watch(p, ps); err != nil {
			return fmt.Errorf("watch: %v", err)
		}
		sub.Drain(func(s, e uintptr) {})
		addr.Store(p)
		mapped.Store(false)
		returned.Store(false)
		done.Store(0)
		gen.Store(int64(i))
		for j := 0; done.Load() != 3; j++ {
			if j > 1000 {
				runtime.Gosched()
			}
		}
		// A late event for this address would land in the next iteration's drain.
		n.Unwatch(p, ps)
		rawMunmap(p, ps)
		var late []span
		sub.Drain(func(s, e uintptr) { late = append(late, span{s, e}) })
		if overlaps(late, p, p+ps) {
			notifiedLate++
		}
	}
	wg.Wait()
	if threadErr != nil {
		return threadErr
	}
	fmt.Printf("backend=%s iterations=%d missed=%d (pending without the range %d) mapped-before-munmap-returned=%d\n",
		k, iters, missed, pendingNotOverlap, mappedBeforeReturn)
	figure("crossthread-"+string(k), "missed %d of %d (C had remapped before B's munmap returned in %d)", missed, iters, mappedBeforeReturn)
	if k == KindSeccomp && missed != 0 {
		return fmt.Errorf("%d stale lookups with the seccomp backend", missed)
	}
	return nil
}

// TestSeccompAuto: PTL_NOTIFIER=seccomp opens this backend through Default, and auto
// never picks it (its filter is one-way and inherited by children).
func TestSeccompAuto(t *testing.T) {
	t.Run("explicit", func(t *testing.T) { runSeccompChild(t, "auto", EnvNotifier+"=seccomp") })
	t.Run("auto", func(t *testing.T) { runSeccompChild(t, "auto", EnvNotifier+"=auto") })
}

func childSeccompAuto() error {
	want, _ := ParseKind(os.Getenv(EnvNotifier))
	n := Default()
	if err := DefaultErr(); err != nil {
		if errors.Is(err, ErrNotSupported) {
			return fmt.Errorf("%w: %v", errSkip, err)
		}
		return err
	}
	got := n.Kind()
	switch {
	case want == KindSeccomp && got != KindSeccomp:
		return fmt.Errorf("PTL_NOTIFIER=seccomp gave %q", got)
	case want == "":
		// auto: eBPF when it opens, else uffd; never seccomp.
		_, ebpfBuilt := openers[KindEBPF]
		if got == KindSeccomp {
			return fmt.Errorf("auto installed the seccomp filter (ebpf built in: %v)", ebpfBuilt)
		}
		figure("auto", "%s", got)
	}
	if got == KindSeccomp {
		// Default's backend is live: a munmap is reported.
		s := n.Subscribe()
		defer s.Close()
		p, err := anonPages(1, unix.MAP_PRIVATE)
		if err != nil {
			return err
		}
		s.Drain(func(a, b uintptr) {})
		rawMunmap(p, pageSize)
		var r []span
		if !s.Pending() || s.Drain(func(a, b uintptr) { r = append(r, span{a, b}) }) || !overlaps(r, p, p+pageSize) {
			return fmt.Errorf("Default's seccomp backend missed a munmap: %v", r)
		}
	}
	return nil
}

// TestSeccompOrphanedChildGetsENOSYS shows the cost of the one-way decision: a
// process started under the filter whose supervisor's process has exited gets ENOSYS
// from every filtered call (the Go runtime dies when its heap next grows: its
// MAP_FIXED mmap fails). The child
// installs the filter and starts a grandchild (a grandchild started after the exit
// cannot even load libc: the loader's MAP_FIXED mmap fails) that waits for the child
// to exit (its stdin, a pipe only the child writes, reaches EOF), then calls munmap
// and madvise
// and prints what they returned on the stdout this test reads; the test waits for
// that output, so nothing outlives it.
func TestSeccompOrphanedChildGetsENOSYS(t *testing.T) {
	out := runSeccompChild(t, "orphan-parent")
	if !strings.Contains(out, "orphan munmap: errno 38") || !strings.Contains(out, "orphan madvise: errno 38") {
		t.Fatalf("an orphan's filtered calls did not fail with ENOSYS (38):\n%s", out)
	}
}

func childOrphanParent() error {
	if _, err := openSeccompChild(); err != nil {
		return err
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return err
	}
	cmd := childCmd(context.Background(), "orphan", fmt.Sprintf("PTL_SECCOMP_PARENT=%d", os.Getpid()))
	cmd.Stdin = pr
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	// The grandchild must be running before this process exits: loading it maps
	// its libraries with MAP_FIXED, which fails once the supervisor is gone.
	rr, rw, err := os.Pipe()
	if err != nil {
		return err
	}
	cmd.ExtraFiles = []*os.File{rw}
	if err := cmd.Start(); err != nil {
		return err
	}
	pr.Close()
	rw.Close()
	var b [1]byte
	if n, _ := rr.Read(b[:]); n != 1 {
		return errors.New("the grandchild did not start")
	}
	runtime.KeepAlive(pw) // closed by the exit of this process
	return nil
}

func childOrphan() error {
	ready := os.NewFile(3, "ready")
	if _, err := ready.Write([]byte{1}); err != nil {
		return err
	}
	ready.Close()
	var b [1]byte
	os.Stdin.Read(b[:]) // EOF once the parent has exited
	// The parent's descriptors (the listener among them) are closed before this
	// process is re-parented: wait for that.
	parent := os.Getenv("PTL_SECCOMP_PARENT")
	for i := 0; i < 1000 && fmt.Sprint(os.Getppid()) == parent; i++ {
		time.Sleep(5 * time.Millisecond)
	}
	p, err := rawMmap(0, 2*pageSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return err
	}
	e1 := rawMadvise(p, 2*pageSize, unix.MADV_DONTNEED)
	e2 := rawMunmap(p, 2*pageSize)
	errno := func(err error) int {
		var e unix.Errno
		if errors.As(err, &e) {
			return int(e)
		}
		return 0
	}
	fmt.Printf("orphan munmap: errno %d\norphan madvise: errno %d\n", errno(e2), errno(e1))
	return nil
}

// childNestedOpen tries to open the backend under an inherited filter.
func childNestedOpen() error {
	_, err := OpenSeccomp()
	switch {
	case errors.Is(err, unix.EBUSY) && errors.Is(err, ErrNotSupported):
		fmt.Println("nested open: EBUSY")
	default:
		fmt.Printf("nested open: %v\n", err)
	}
	return nil
}
