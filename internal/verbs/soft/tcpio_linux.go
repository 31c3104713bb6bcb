package soft

import "golang.org/x/sys/unix"

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
