//go:build !linux

package soft

import "syscall"

// writev writes the first buffer (no vectored write here).
func writev(fd int, iov [][]byte) (int, error) {
	for _, b := range iov {
		if len(b) > 0 {
			return syscall.Write(fd, b)
		}
	}
	return 0, nil
}
