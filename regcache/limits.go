package regcache

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// Default limits.
const (
	// DefaultMaxEntries bounds the cached entries. Each watched entry may split a VMA
	// (vm.max_map_count is 65530 by default), so the bound stays well below that.
	DefaultMaxEntries = 4096
	// DefaultMaxBytes bounds the pinned bytes when RLIMIT_MEMLOCK does not.
	DefaultMaxBytes = 1 << 30
)

// limits are the effective bounds of a cache.
type limits struct {
	maxEntries int
	maxBytes   uint64
	memlock    uint64 // RLIMIT_MEMLOCK soft limit that applies (0: none)
}

// over reports whether adding an entry of size bytes would exceed the limits.
func (l limits) over(entries int, pinned, size uint64) bool {
	return entries+1 > l.maxEntries || pinned+size > l.maxBytes
}

// effectiveMaxBytes combines the configured bound with RLIMIT_MEMLOCK, which applies
// unless the process holds CAP_IPC_LOCK or the limit is infinite.
func effectiveMaxBytes(configured uint64) (maxBytes, memlock uint64) {
	maxBytes = configured
	if lim, ok := memlockLimit(); ok && !hasIPCLock() {
		memlock = lim
		if lim < maxBytes {
			maxBytes = lim
		}
	}
	return maxBytes, memlock
}

// capIPCLock is CAP_IPC_LOCK's bit in the capability sets.
const capIPCLock = 14

// hasIPCLock reports whether the effective capability set holds CAP_IPC_LOCK (read
// from /proc/self/status; false where that file does not exist).
func hasIPCLock() bool {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			caps, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			return err == nil && caps&(1<<capIPCLock) != 0
		}
	}
	return false
}
