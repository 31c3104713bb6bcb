//go:build !linux

package soft

// memlockRoom is unbounded where there is no RLIMIT_MEMLOCK to honour.
func memlockRoom() uint64 { return 1 << 62 }
