package bootstrap

import (
	"net"
	"os"
	"syscall"
)

// fdConn turns the inherited descriptor fd, which must be a stream socket,
// into a connection that owns it. A descriptor that is not a socket is left
// alone (it may be the process's own) and reported.
func fdConn(fd int) (net.Conn, error) {
	typ, err := syscall.GetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_TYPE)
	if err != nil {
		return nil, errDetail(ErrBadEnv, "PMI_FD=%d is not an open socket: %v", fd, err)
	}
	if typ != syscall.SOCK_STREAM {
		return nil, errDetail(ErrBadEnv, "PMI_FD=%d is a socket of type %d, not a stream", fd, typ)
	}
	f := os.NewFile(uintptr(fd), "PMI_FD")
	c, err := net.FileConn(f) // duplicates the descriptor
	f.Close()
	if err != nil {
		return nil, errDetail(ErrBadEnv, "PMI_FD=%d: %v", fd, err)
	}
	return c, nil
}
