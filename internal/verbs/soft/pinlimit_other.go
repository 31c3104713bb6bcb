//go:build !linux

package soft

// memlockLimit is unknown where there is no RLIMIT_MEMLOCK to read.
func memlockLimit() (uint64, bool) { return 0, false }
