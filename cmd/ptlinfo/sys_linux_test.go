//go:build linux

package main

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// checkSys compares the memlock and ptrace parts with what the test reads itself.
func checkSys(t *testing.T, r Report) {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_MEMLOCK, &rl); err != nil {
		t.Fatal(err)
	}
	m := r.Memlock
	if m.Soft != rl.Cur || m.Hard != rl.Max || m.Unlimited != (rl.Cur == unix.RLIM_INFINITY) {
		t.Errorf("memlock %+v, getrlimit says %d/%d", m, rl.Cur, rl.Max)
	}
	if !m.Unlimited && m.Headroom+m.Locked+m.Pinned != m.Soft && m.Locked+m.Pinned < m.Soft {
		t.Errorf("memlock headroom %d + locked %d + pinned %d != soft %d", m.Headroom, m.Locked, m.Pinned, m.Soft)
	}
	scope := -1
	if b, err := os.ReadFile(yamaPath); err == nil {
		scope, _ = strconv.Atoi(strings.TrimSpace(string(b)))
	}
	if r.Ptrace.YamaScope != scope || r.Ptrace.Meaning == "" {
		t.Errorf("ptrace %+v, %s says %d", r.Ptrace, yamaPath, scope)
	}
	if (scope == -1 || scope == 0) && r.Ptrace.CMAPeer != "ok" {
		t.Errorf("cross-memory attach probe %q where Yama allows it", r.Ptrace.CMAPeer)
	}
}
