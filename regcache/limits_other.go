//go:build !linux

package regcache

// memlockLimit reports no limit where RLIMIT_MEMLOCK is not known.
func memlockLimit() (uint64, bool) { return 0, false }
