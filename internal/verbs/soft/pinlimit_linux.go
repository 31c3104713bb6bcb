package soft

import "golang.org/x/sys/unix"

// memlockLimit returns the process's RLIMIT_MEMLOCK in bytes.
func memlockLimit() (uint64, bool) {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_MEMLOCK, &rl); err != nil {
		return 0, false
	}
	return rl.Cur, true
}
