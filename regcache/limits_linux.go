//go:build linux

package regcache

import (
	"os"

	"golang.org/x/sys/unix"
)

// memlockLimit returns the RLIMIT_MEMLOCK soft limit, ok=false when it is infinite.
func memlockLimit() (uint64, bool) {
	var r unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_MEMLOCK, &r); err != nil || r.Cur == unix.RLIM_INFINITY {
		return 0, false
	}
	return r.Cur, true
}

// readLockedMemory reads VmLck and VmPin from /proc/self/status.
func readLockedMemory() (LockedMemory, error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return LockedMemory{}, err
	}
	defer f.Close()
	return parseLockedMemory(f)
}
