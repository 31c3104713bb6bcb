//go:build linux

package driverhooks

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/cilium/ebpf/asm"
	"golang.org/x/sys/unix"
)

// tracepoint is one syscall tracepoint the backend attaches to.
type tracepoint struct {
	name     string                                                           // event under events/syscalls
	fields   []string                                                         // the arguments the program reads
	required bool                                                             // open fails without it
	build    func(g *progGen, off map[string]int16) (asm.Instructions, error) // the program
	id       uint64
	off      map[string]int16
	found    bool
}

// ebpfTracepoints are the calls that release or replace pages. A missing optional
// tracepoint means the kernel lacks the call (SysV IPC, remap_file_pages).
var ebpfTracepoints = []tracepoint{
	{name: "sys_enter_munmap", fields: []string{"addr", "len"}, required: true, build: buildMunmap},
	{name: "sys_enter_mremap", fields: []string{"addr", "old_len", "new_len", "flags", "new_addr"}, required: true, build: buildMremap},
	{name: "sys_enter_mmap", fields: []string{"addr", "len", "flags"}, required: true, build: buildMmap},
	{name: "sys_enter_madvise", fields: []string{"start", "len_in", "behavior"}, required: true, build: buildMadvise},
	{name: "sys_enter_brk", fields: []string{"brk"}, required: true, build: buildBrkEnter},
	{name: "sys_enter_process_madvise", fields: []string{"behavior"}, build: buildProcessMadvise},
	{name: "sys_enter_shmdt", build: buildShmdt},
	{name: "sys_enter_shmat", fields: []string{"shmflg"}, build: buildShmat},
	{name: "sys_enter_remap_file_pages", fields: []string{"start", "size"}, build: buildRemapFilePages},
}

// readTracepoints reads the ids and argument offsets of tps from tracefs, mounting
// it on a temporary directory for the duration when none is mounted (the ids are
// global; nothing stays mounted).
func readTracepoints(in []tracepoint) ([]tracepoint, error) {
	dir, cleanup, err := tracefsDir()
	if err != nil {
		return nil, err
	}
	defer cleanup()
	tps := append([]tracepoint(nil), in...)
	for i := range tps {
		tp := &tps[i]
		ev := filepath.Join(dir, "events", "syscalls", tp.name)
		idb, err := os.ReadFile(filepath.Join(ev, "id"))
		if errors.Is(err, os.ErrNotExist) && !tp.required {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("tracepoint syscalls/%s: %w", tp.name, err)
		}
		if tp.id, err = strconv.ParseUint(strings.TrimSpace(string(idb)), 10, 64); err != nil {
			return nil, fmt.Errorf("tracepoint syscalls/%s id: %w", tp.name, err)
		}
		format, err := os.ReadFile(filepath.Join(ev, "format"))
		if err != nil {
			return nil, fmt.Errorf("tracepoint syscalls/%s: %w", tp.name, err)
		}
		if tp.off, err = fieldOffsets(string(format), tp.fields); err != nil {
			return nil, fmt.Errorf("tracepoint syscalls/%s: %w", tp.name, err)
		}
		tp.found = true
	}
	return tps, nil
}

// fieldOffsets returns the offsets of the named 8-byte fields of a tracepoint format.
func fieldOffsets(format string, names []string) (map[string]int16, error) {
	all := map[string][2]int{}
	for _, line := range strings.Split(format, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "field:") {
			continue
		}
		var decl string
		off, size := -1, -1
		for _, part := range strings.Split(line, ";") {
			part = strings.TrimSpace(part)
			switch {
			case strings.HasPrefix(part, "field:"):
				decl = strings.TrimPrefix(part, "field:")
			case strings.HasPrefix(part, "offset:"):
				off, _ = strconv.Atoi(strings.TrimPrefix(part, "offset:"))
			case strings.HasPrefix(part, "size:"):
				size, _ = strconv.Atoi(strings.TrimPrefix(part, "size:"))
			}
		}
		if f := strings.Fields(decl); len(f) > 0 {
			all[strings.TrimLeft(f[len(f)-1], "*")] = [2]int{off, size}
		}
	}
	out := make(map[string]int16, len(names))
	for _, n := range names {
		f, ok := all[n]
		if !ok {
			return nil, fmt.Errorf("no field %q in the format", n)
		}
		if f[1] != 8 || f[0] < 0 || f[0] > 512 {
			return nil, fmt.Errorf("field %q has offset %d and size %d; want 8 bytes", n, f[0], f[1])
		}
		out[n] = int16(f[0])
	}
	return out, nil
}

// tracefsDir returns a tracefs mount: a mounted one, or one mounted on a temporary
// directory until cleanup.
func tracefsDir() (dir string, cleanup func(), err error) {
	if mi, err := os.ReadFile("/proc/self/mountinfo"); err == nil {
		for _, line := range strings.Split(string(mi), "\n") {
			// id parent major:minor root mountpoint options... - fstype source opts
			pre, post, ok := strings.Cut(line, " - ")
			f, g := strings.Fields(pre), strings.Fields(post)
			if !ok || len(f) < 5 || len(g) < 1 || f[3] != "/" {
				continue
			}
			mp := unescapeMount(f[4])
			switch g[0] {
			case "tracefs":
				return mp, func() {}, nil
			case "debugfs":
				if st, err := os.Stat(filepath.Join(mp, "tracing", "events")); err == nil && st.IsDir() {
					return filepath.Join(mp, "tracing"), func() {}, nil
				}
			}
		}
	}
	tmp, err := os.MkdirTemp("", "ptl-tracefs-")
	if err != nil {
		return "", nil, fmt.Errorf("no tracefs mounted, and no directory to mount one: %w", err)
	}
	if err := unix.Mount("tracefs", tmp, "tracefs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC|unix.MS_RDONLY, ""); err != nil {
		os.Remove(tmp)
		return "", nil, fmt.Errorf("no tracefs mounted, and mounting one failed (needs CAP_SYS_ADMIN): %w", err)
	}
	return tmp, func() {
		unix.Unmount(tmp, unix.MNT_DETACH)
		os.Remove(tmp)
	}, nil
}

// unescapeMount undoes the octal escapes of a mountinfo path.
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
