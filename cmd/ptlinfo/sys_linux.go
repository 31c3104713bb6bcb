//go:build linux

package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/goportals/goportals/regcache"
)

// MemlockInfo is RLIMIT_MEMLOCK and what is already charged to it.
type MemlockInfo struct {
	// Soft and Hard are the limits in bytes; Unlimited when the soft limit is infinite.
	Soft      uint64 `json:"soft"`
	Hard      uint64 `json:"hard"`
	Unlimited bool   `json:"unlimited"`
	// CapIPCLock exempts the process from the limit.
	CapIPCLock bool `json:"cap_ipc_lock"`
	// Locked and Pinned are VmLck and VmPin of /proc/self/status.
	Locked uint64 `json:"locked"`
	Pinned uint64 `json:"pinned"`
	// Headroom is what can still be locked or pinned (Soft - Locked - Pinned), when
	// the limit applies.
	Headroom uint64 `json:"headroom"`
	Error    string `json:"error,omitempty"`
}

func memlockReport() MemlockInfo {
	var info MemlockInfo
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_MEMLOCK, &rl); err != nil {
		info.Error = err.Error()
		return info
	}
	info.Soft, info.Hard = rl.Cur, rl.Max
	info.Unlimited = rl.Cur == unix.RLIM_INFINITY
	info.CapIPCLock = hasCap(unix.CAP_IPC_LOCK)
	lm, err := regcache.ReadLockedMemory()
	if err != nil {
		info.Error = err.Error()
	}
	info.Locked, info.Pinned = lm.Locked, lm.Pinned
	if !info.Unlimited && lm.Total() < rl.Cur {
		info.Headroom = rl.Cur - lm.Total()
	}
	return info
}

// hasCap reports whether the effective capability set holds capability c.
func hasCap(c int) bool {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			caps, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			return err == nil && caps&(1<<uint(c)) != 0
		}
	}
	return false
}

// yamaPath holds Yama's ptrace scope; absent when the kernel has no Yama.
const yamaPath = "/proc/sys/kernel/yama/ptrace_scope"

// PtraceInfo says whether ranks may use cross-memory attach on each other.
type PtraceInfo struct {
	// YamaScope is Yama's ptrace_scope (0 classic, 1 restricted, 2 admin-only, 3 none),
	// -1 when the kernel has no Yama.
	YamaScope int    `json:"yama_scope"`
	Meaning   string `json:"meaning"`
	// CMAPeer is the result of process_vm_readv from a child process into this one
	// (a non-descendant reader, as a sibling rank is): "ok" or the error.
	CMAPeer string `json:"cma_peer"`
	// SetPtracer is the result of prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY) (tried
	// when the scope is 1) and CMAPeerAfter the same probe after it.
	SetPtracer   string `json:"set_ptracer,omitempty"`
	CMAPeerAfter string `json:"cma_peer_after,omitempty"`
	Error        string `json:"error,omitempty"`
}

var yamaMeaning = map[int]string{
	-1: "no Yama: same-user processes may attach to each other",
	0:  "classic: same-user processes may attach to each other",
	1:  "restricted: only ancestors may attach, unless the target calls prctl(PR_SET_PTRACER); ranks (siblings) must allow it",
	2:  "admin-only: attaching needs CAP_SYS_PTRACE",
	3:  "no attach at all: cross-memory attach between ranks is impossible",
}

func ptraceReport() PtraceInfo {
	info := PtraceInfo{YamaScope: -1}
	if b, err := os.ReadFile(yamaPath); err == nil {
		n, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			info.Error = fmt.Sprintf("%s: %v", yamaPath, err)
		} else {
			info.YamaScope = n
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		info.Error = err.Error()
	}
	info.Meaning = yamaMeaning[info.YamaScope]
	info.CMAPeer = cmaProbe()
	if info.YamaScope == 1 {
		if err := unix.Prctl(unix.PR_SET_PTRACER, unix.PR_SET_PTRACER_ANY, 0, 0, 0); err != nil {
			info.SetPtracer = err.Error()
		} else {
			info.SetPtracer = "ok"
			info.CMAPeerAfter = cmaProbe()
		}
	}
	return info
}

// cmaProbeEnv makes ptlinfo a probe child: "PID:ADDR:WANT" reads 8 bytes at ADDR in
// PID with process_vm_readv and exits 0 when they are WANT.
const cmaProbeEnv = "PTLINFO_CMA_PROBE"

// cmaMagic is the word the probe reads.
var cmaMagic = uint64(0x5054_4c49_4e46_4f21)

// cmaProbe runs a child that reads a word of this process.
func cmaProbe() string {
	exe, err := os.Executable()
	if err != nil {
		return "cannot probe: " + err.Error()
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d:%d:%d", cmaProbeEnv, os.Getpid(),
		uintptr(unsafe.Pointer(&cmaMagic)), cmaMagic))
	out, err := cmd.CombinedOutput()
	if err != nil {
		msg := strings.TrimSpace(string(out))
		if msg == "" {
			msg = err.Error()
		}
		return msg
	}
	return "ok"
}

// runCMAProbe is the probe child; it reports whether it ran.
func runCMAProbe() bool {
	spec, ok := os.LookupEnv(cmaProbeEnv)
	if !ok {
		return false
	}
	var pid int
	var addr uintptr
	var want uint64
	if _, err := fmt.Sscanf(spec, "%d:%d:%d", &pid, &addr, &want); err != nil {
		fmt.Fprintln(os.Stderr, "bad probe spec:", err)
		os.Exit(2)
	}
	var got uint64
	local := []unix.Iovec{{Base: (*byte)(unsafe.Pointer(&got)), Len: 8}}
	remote := []unix.RemoteIovec{{Base: addr, Len: 8}}
	if _, err := unix.ProcessVMReadv(pid, local, remote, 0); err != nil {
		fmt.Fprintln(os.Stderr, "process_vm_readv:", err)
		os.Exit(1)
	}
	if got != want {
		fmt.Fprintf(os.Stderr, "process_vm_readv read %#x, want %#x\n", got, want)
		os.Exit(1)
	}
	os.Exit(0)
	return true
}

// printSys prints the memlock and ptrace parts.
func printSys(p func(string, ...any), r Report) {
	m := r.Memlock
	p("RLIMIT_MEMLOCK:")
	if m.Error != "" {
		p("  error: %s", m.Error)
	}
	switch {
	case m.Unlimited:
		p("  soft unlimited; locked %s, pinned %s", bytesText(m.Locked), bytesText(m.Pinned))
	case m.CapIPCLock:
		p("  soft %s (not enforced: CAP_IPC_LOCK); locked %s, pinned %s", bytesText(m.Soft), bytesText(m.Locked), bytesText(m.Pinned))
	default:
		p("  soft %s, hard %s; locked %s, pinned %s; headroom %s", bytesText(m.Soft), limitOrInf(m.Hard),
			bytesText(m.Locked), bytesText(m.Pinned), bytesText(m.Headroom))
	}
	t := r.Ptrace
	p("ptrace / cross-memory attach:")
	scope := "absent"
	if t.YamaScope >= 0 {
		scope = strconv.Itoa(t.YamaScope)
	}
	p("  Yama ptrace_scope: %s: %s", scope, t.Meaning)
	p("  process_vm_readv from another process: %s", t.CMAPeer)
	if t.SetPtracer != "" {
		p("  prctl(PR_SET_PTRACER, ANY): %s; then: %s", t.SetPtracer, t.CMAPeerAfter)
	}
	if t.Error != "" {
		p("  error: %s", t.Error)
	}
}

func limitOrInf(n uint64) string {
	if n == unix.RLIM_INFINITY {
		return "unlimited"
	}
	return bytesText(n)
}
