package soft

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// writev writes the buffers with one vectored write (non-blocking socket).
func writev(fd int, iov [][]byte) (int, error) {
	n, err := unix.Writev(fd, iov)
	if err == unix.EINTR {
		return max(n, 0), nil
	}
	return max(n, 0), err
}

// dupFD returns a duplicate of the socket descriptor fd (close on exec; it
// shares fd's non-blocking mode).
func dupFD(fd int) (int, error) {
	return unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
}

// fdCloser closes a descriptor.
type fdCloser int

func (f fdCloser) Close() error { return unix.Close(int(f)) }

// readable reports whether the socket fd holds data to read (or an error or end
// of file to learn): a poll with no timeout, made without the runtime's system
// call hooks (it cannot block). Unlike a read that finds nothing, it does not
// take the socket's lock, which the kernel's delivery of an arriving segment
// would wait for (or hand to the reader's release, after the read has looked).
func readable(fd int) bool {
	pfd := unix.PollFd{Fd: int32(fd), Events: unix.POLLIN}
	var ts unix.Timespec
	n, _, e := unix.RawSyscall6(unix.SYS_PPOLL, uintptr(unsafe.Pointer(&pfd)), 1, uintptr(unsafe.Pointer(&ts)), 0, 0, 0)
	if e != 0 {
		return true // let the read tell
	}
	return n != 0
}
