package soft

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// pollNow polls one descriptor without waiting: poll(2), whose timeout is a
// number (ppoll's is a structure the kernel copies in).
func pollNow(pfd *unix.PollFd) (uintptr, unix.Errno) {
	n, _, e := unix.RawSyscall(unix.SYS_POLL, uintptr(unsafe.Pointer(pfd)), 1, 0)
	return n, e
}
