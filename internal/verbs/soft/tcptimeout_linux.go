package soft

import "golang.org/x/sys/unix"

// setUserTimeout sets TCP_USER_TIMEOUT on the socket fd to tcpFailAfter.
func setUserTimeout(fd int) error {
	return unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, int(tcpFailAfter.Milliseconds()))
}
