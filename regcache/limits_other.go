//go:build !linux

package regcache

import "errors"

// memlockLimit reports no limit where RLIMIT_MEMLOCK is not known.
func memlockLimit() (uint64, bool) { return 0, false }

// readLockedMemory fails: no /proc/self/status here.
func readLockedMemory() (LockedMemory, error) {
	return LockedMemory{}, errors.New("regcache: locked memory is only known on Linux")
}
