//go:build linux && !amd64

package soft

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// pollNow polls one descriptor without waiting (ppoll with a zero timeout:
// some architectures have no poll(2)).
func pollNow(pfd *unix.PollFd) (uintptr, unix.Errno) {
	var ts unix.Timespec
	n, _, e := unix.RawSyscall6(unix.SYS_PPOLL, uintptr(unsafe.Pointer(pfd)), 1, uintptr(unsafe.Pointer(&ts)), 0, 0, 0)
	return n, e
}
