//go:build linux

package soft

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/goportals/goportals/internal/verbs"
)

// seccompChildEnv names, in a child's environment, the errno a seccomp filter
// makes io_uring_setup fail with ("ENOSYS": a kernel without io_uring, "EPERM":
// kernel.io_uring_disabled or a container's policy). The child checks that
// contexts fall back to mlock.
const seccompChildEnv = "SOFT_SECCOMP_CHILD"

// TestPinFallback: where io_uring_setup is refused, Open pins with mlock (and says
// why), PTL_SOFT_PIN=io_uring makes Open fail with ErrNotSupported, and regions
// register and unpin as before.
func TestPinFallback(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, errno := range []string{"ENOSYS", "EPERM"} {
		t.Run(errno, func(t *testing.T) {
			cmd := exec.Command(exe, "-test.run=^$")
			cmd.Env = append(os.Environ(), seccompChildEnv+"="+errno)
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

func runSeccompChild(name string) int {
	errno := map[string]syscall.Errno{"ENOSYS": unix.ENOSYS, "EPERM": unix.EPERM}[name]
	if errno == 0 {
		fmt.Println("fail: unknown errno", name)
		return 1
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		fmt.Println("skip: no_new_privs:", err)
		return 0
	}
	prog := []unix.SockFilter{
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: 0}, // seccomp_data.nr
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, Jt: 0, Jf: 1, K: unix.SYS_IO_URING_SETUP},
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ERRNO | uint32(errno)},
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW},
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if _, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC,
		uintptr(unsafe.Pointer(&fprog))); e != 0 {
		fmt.Println("skip: seccomp:", e)
		return 0
	}
	if err := seccompScenario(errno); err != nil {
		fmt.Println("fail:", err)
		return 1
	}
	return 0
}

func seccompScenario(errno syscall.Errno) error {
	os.Setenv(pinEnv, PinIOUring)
	if c, err := Open(); !errors.Is(err, verbs.ErrNotSupported) {
		if err == nil {
			c.Close()
		}
		return fmt.Errorf("%s=io_uring without io_uring: Open returned %v, want ErrNotSupported", pinEnv, err)
	}
	os.Setenv(pinEnv, "")
	c, err := Open()
	if err != nil {
		return err
	}
	defer c.Close()
	if c.PinMethod() != PinMlock || !strings.Contains(c.pinWhy, errno.Error()) {
		return fmt.Errorf("PinMethod %q (%s), want mlock because of %v", c.PinMethod(), c.pinWhy, errno)
	}
	pd, err := c.AllocPD()
	if err != nil {
		return err
	}
	mem, err := unix.Mmap(-1, 0, 16*pageSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return err
	}
	reg, err := pd.RegMR(mem, rw)
	if err != nil {
		return err
	}
	if m := reg.(*mr); !m.pin.locked || m.pin.slots != nil {
		return fmt.Errorf("region pinned with slots %v, locked %v", m.pin.slots, m.pin.locked)
	}
	// An mlock pin: the pages are locked, so madvise refuses to drop them.
	if err := unix.Madvise(mem, unix.MADV_DONTNEED); err == nil {
		return errors.New("madvise(DONTNEED) succeeded on mlocked memory")
	}
	if err := reg.Dereg(); err != nil {
		return err
	}
	if err := unix.Madvise(mem, unix.MADV_DONTNEED); err != nil {
		return fmt.Errorf("madvise after Dereg: %w", err)
	}
	fmt.Printf("ok io_uring_setup failing with %v: contexts pin with mlock (%s)\n", errno, c.pinWhy)
	return nil
}
