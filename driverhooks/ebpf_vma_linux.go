//go:build linux

package driverhooks

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// vma is what Watch needs to know of one mapping.
type vma struct {
	start, end   uintptr
	shared, file bool
}

// procmapQuery mirrors struct procmap_query (PROCMAP_QUERY, Linux 6.11).
type procmapQuery struct {
	size, queryFlags, queryAddr             uint64
	vmaStart, vmaEnd, vmaFlags, vmaPageSize uint64
	vmaOffset, inode                        uint64
	devMajor, devMinor                      uint32
	vmaNameSize, buildIDSize                uint32
	vmaNameAddr, buildIDAddr                uint64
}

const (
	procmapQueryIoctl  = 0xC0000000 | uintptr(unsafe.Sizeof(procmapQuery{}))<<16 | 'f'<<8 | 17
	procmapQueryShared = 0x08
)

var procmapQueryMissing atomic.Bool

// queryVMA returns the mapping that contains addr, through PROCMAP_QUERY when the
// kernel has it and by reading /proc/self/maps otherwise.
func queryVMA(maps *os.File, addr uintptr) (vma, error) {
	if !procmapQueryMissing.Load() {
		q := procmapQuery{queryAddr: uint64(addr)}
		q.size = uint64(unsafe.Sizeof(q))
		_, _, e := unix.Syscall(unix.SYS_IOCTL, maps.Fd(), procmapQueryIoctl, uintptr(unsafe.Pointer(&q)))
		switch e {
		case 0:
			return vma{start: uintptr(q.vmaStart), end: uintptr(q.vmaEnd),
				shared: q.vmaFlags&procmapQueryShared != 0,
				file:   q.inode != 0 || q.devMajor != 0 || q.devMinor != 0}, nil
		case unix.ENOENT:
			return vma{}, &OpError{Op: "watch", Addr: addr, Err: ErrNotMapped}
		case unix.ENOTTY, unix.EINVAL:
			procmapQueryMissing.Store(true)
		default:
			return vma{}, &OpError{Op: "watch", Addr: addr, Err: ErrNotSupported, Cause: e}
		}
	}
	return scanMaps(addr)
}

// scanMaps finds the mapping containing addr in /proc/self/maps.
func scanMaps(addr uintptr) (vma, error) {
	data, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return vma{}, &OpError{Op: "watch", Addr: addr, Err: ErrNotSupported, Cause: err}
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		v, ok := parseMapsLine(sc.Text())
		if ok && v.start <= addr && addr < v.end {
			return v, nil
		}
	}
	return vma{}, &OpError{Op: "watch", Addr: addr, Err: ErrNotMapped}
}

// parseMapsLine parses "start-end perms offset major:minor inode [path]".
func parseMapsLine(line string) (vma, bool) {
	f := strings.Fields(line)
	if len(f) < 5 {
		return vma{}, false
	}
	lo, hi, ok := strings.Cut(f[0], "-")
	if !ok || len(f[1]) < 4 {
		return vma{}, false
	}
	s, err1 := strconv.ParseUint(lo, 16, 64)
	e, err2 := strconv.ParseUint(hi, 16, 64)
	if err1 != nil || err2 != nil {
		return vma{}, false
	}
	return vma{start: uintptr(s), end: uintptr(e), shared: f[1][3] == 's',
		file: f[3] != "00:00" || f[4] != "0"}, true
}
