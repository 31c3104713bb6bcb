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
