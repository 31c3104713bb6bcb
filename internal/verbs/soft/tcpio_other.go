//go:build !linux

package soft

import "syscall"

// writev writes the first buffer (no vectored write here).
func writev(fd int, iov [][]byte) (int, error) {
	for _, b := range iov {
		if len(b) > 0 {
			return sendFD(fd, b)
		}
	}
	return 0, nil
}

// sendFD writes b (non-blocking socket). As on Linux, a failed write returns
// 0 bytes (write(2) returns -1 here), and an interrupted one no error.
func sendFD(fd int, b []byte) (int, error) {
	n, err := syscall.Write(fd, b)
	switch {
	case err == syscall.EINTR:
		return 0, nil
	case err != nil:
		return 0, err
	}
	return n, nil
}

// dupFD is not used here (no poller serves a link).
func dupFD(fd int) (int, error) { return -1, syscall.ENOSYS }

// fdCloser closes a descriptor.
type fdCloser int

func (f fdCloser) Close() error { return syscall.Close(int(f)) }

// readable reports true: the read itself looks here.
func readable(fd int) bool { return true }

// readFD reads from the socket fd (non-blocking).
func readFD(fd int, b []byte) (int, error) { return syscall.Read(fd, b) }
