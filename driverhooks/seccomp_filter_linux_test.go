//go:build linux && cgo

package driverhooks

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// The filter's decisions, checked in this process without installing it: a small
// interpreter runs the program over seccomp_data built by hand.

const (
	retAllow  = 0x7fff0000
	retNotify = 0x7fc00000
)

// runBPF interprets the classic BPF subset the filter uses over data.
func runBPF(t *testing.T, prog []bpfInsn, data []byte) uint32 {
	t.Helper()
	var acc uint32
	for pc := 0; pc < len(prog); pc++ {
		in := prog[pc]
		switch in.Code {
		case 0x20: // LD W ABS
			if int(in.K)+4 > len(data) {
				t.Fatalf("pc %d loads past seccomp_data (%d)", pc, in.K)
			}
			acc = binary.LittleEndian.Uint32(data[in.K:])
		case 0x15, 0x35, 0x45: // JEQ, JGE, JSET
			var take bool
			switch in.Code {
			case 0x15:
				take = acc == in.K
			case 0x35:
				take = acc >= in.K
			default:
				take = acc&in.K != 0
			}
			if take {
				pc += int(in.Jt)
			} else {
				pc += int(in.Jf)
			}
		case 0x06: // RET K
			return in.K
		default:
			t.Fatalf("pc %d: opcode %#x not interpreted", pc, in.Code)
		}
	}
	t.Fatal("the program falls off its end")
	return 0
}

// seccompData lays out struct seccomp_data.
func seccompData(arch uint32, nr int32, args ...uint64) []byte {
	b := make([]byte, 64)
	binary.LittleEndian.PutUint32(b[0:], uint32(nr))
	binary.LittleEndian.PutUint32(b[4:], arch)
	for i, a := range args {
		binary.LittleEndian.PutUint64(b[16+8*i:], a)
	}
	return b
}

func TestSeccompFilterDecisions(t *testing.T) {
	prog := seccompFilter()
	if prog == nil {
		t.Skip("no seccomp filter for " + runtime.GOARCH)
	}
	var arch uint32
	switch runtime.GOARCH {
	case "amd64":
		arch = 0xc000003e
	case "arm64":
		arch = 0xc00000b7
	default:
		t.Fatalf("a filter for %s that the test does not know", runtime.GOARCH)
	}
	const (
		a    = 0x7f0000000000
		n    = 0x2000
		rw   = unix.PROT_READ | unix.PROT_WRITE
		anon = unix.MAP_PRIVATE | unix.MAP_ANONYMOUS
	)
	type call struct {
		name   string
		nr     int32
		args   []uint64
		notify bool
	}
	calls := []call{
		{"munmap", unix.SYS_MUNMAP, []uint64{a, n}, true},
		{"mremap", unix.SYS_MREMAP, []uint64{a, n, 2 * n, unix.MREMAP_MAYMOVE}, true},
		{"mmap", unix.SYS_MMAP, []uint64{0, n, rw, anon, ^uint64(0), 0}, false},
		{"mmap hint", unix.SYS_MMAP, []uint64{a, n, rw, anon, ^uint64(0), 0}, false},
		{"mmap MAP_FIXED", unix.SYS_MMAP, []uint64{a, n, rw, anon | unix.MAP_FIXED, ^uint64(0), 0}, true},
		{"mmap MAP_FIXED_NOREPLACE", unix.SYS_MMAP, []uint64{a, n, rw, anon | unix.MAP_FIXED_NOREPLACE, ^uint64(0), 0}, false},
		{"brk(0)", unix.SYS_BRK, []uint64{0}, false},
		{"brk", unix.SYS_BRK, []uint64{a}, true},
		{"brk high word", unix.SYS_BRK, []uint64{1 << 32}, true},
		{"shmdt", unix.SYS_SHMDT, []uint64{a}, true},
		{"shmat", unix.SYS_SHMAT, []uint64{1, 0, 0}, false},
		{"shmat SHM_REMAP", unix.SYS_SHMAT, []uint64{1, a, 040000}, true},
		{"remap_file_pages", unix.SYS_REMAP_FILE_PAGES, []uint64{a, n, 0, 0, 0}, true},
		{"getppid", unix.SYS_GETPPID, nil, false},
		{"mprotect", unix.SYS_MPROTECT, []uint64{a, n, unix.PROT_READ}, false},
		{"ioctl", unix.SYS_IOCTL, []uint64{3, 0xc0502100, a}, false},
		{"msync", unix.SYS_MSYNC, []uint64{a, n, unix.MS_ASYNC}, false},
	}
	// Advice: notified unless it neither drops nor replaces pages.
	harmless := map[uint64]bool{0: true, 1: true, 2: true, 3: true, 10: true, 11: true, 12: true, 13: true, 14: true,
		15: true, 16: true, 17: true, 18: true, 19: true, 20: true, 22: true, 23: true, 103: true}
	for adv := uint64(0); adv < 110; adv++ {
		calls = append(calls,
			call{fmt.Sprintf("madvise(%d)", adv), unix.SYS_MADVISE, []uint64{a, n, adv}, !harmless[adv]},
			call{fmt.Sprintf("process_madvise(%d)", adv), unix.SYS_PROCESS_MADVISE, []uint64{3, a, 1, adv, 0}, !harmless[adv]})
	}
	for _, adv := range []uint64{unix.MADV_DONTNEED, unix.MADV_FREE, unix.MADV_REMOVE, unix.MADV_PAGEOUT, 24 /* DONTNEED_LOCKED */, unix.MADV_COLLAPSE, 102 /* GUARD_INSTALL */} {
		if harmless[adv] {
			t.Fatalf("advice %d drops pages but is listed as harmless", adv)
		}
	}
	// The high word of an int advice is ignored by the kernel, so by the filter too.
	calls = append(calls, call{"madvise(WILLNEED|1<<32)", unix.SYS_MADVISE, []uint64{a, n, 1<<32 | unix.MADV_WILLNEED}, false},
		call{"madvise(-1)", unix.SYS_MADVISE, []uint64{a, n, 0xffffffff}, true})
	if runtime.GOARCH == "amd64" {
		calls = append(calls, call{"x32 munmap", 0x40000000 | unix.SYS_MUNMAP, []uint64{a, n}, true},
			call{"x32 getppid", 0x40000000 | unix.SYS_GETPPID, nil, true})
	}
	for _, c := range calls {
		got := runBPF(t, prog, seccompData(arch, c.nr, c.args...))
		want := uint32(retAllow)
		if c.notify {
			want = retNotify
		}
		if got != want {
			t.Errorf("%s: filter returns %#x, want %#x", c.name, got, want)
		}
	}
	// The supervisor's own calls, made from one instruction, pass unexamined.
	ip := seccompSupervisorIP()
	own := seccompData(arch, unix.SYS_MUNMAP, a, n)
	binary.LittleEndian.PutUint64(own[8:], ip)
	if got := runBPF(t, prog, own); got != retAllow {
		t.Errorf("munmap from the supervisor's instruction: %#x, want allow", got)
	}
	for _, other := range []uint64{ip + 1, ip ^ 1<<32, ip &^ 0xffffffff} {
		binary.LittleEndian.PutUint64(own[8:], other)
		if got := runBPF(t, prog, own); got != retNotify {
			t.Errorf("munmap from %#x (the supervisor's is %#x): %#x, want notify", other, ip, got)
		}
	}
	// A call of another ABI (i386 through int 0x80) is notified whatever it is.
	if got := runBPF(t, prog, seccompData(0x40000003, 20 /* i386 getpid */)); got != retNotify {
		t.Errorf("i386 call: %#x, want notify", got)
	}
	if len(prog) > 96 {
		t.Errorf("program of %d instructions", len(prog))
	}
}
