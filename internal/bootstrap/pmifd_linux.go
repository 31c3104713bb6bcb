package bootstrap

import (
	"net"
	"os"
	"sync"
	"syscall"
)

// pmiFiles holds every inherited PMI descriptor this process has taken, open
// for the life of the process: its number can then never be reused for another
// file, so a second Open cannot mistake some other socket for the launcher,
// and it is refused instead of restarting PMI on a finalized stream.
var pmiFiles struct {
	sync.Mutex
	taken map[int]*os.File
}

// fdConn turns the inherited descriptor fd, which must be a stream socket,
// into a connection (on a duplicate of it). A descriptor that is not a socket
// is left alone (it may be the process's own) and reported.
func fdConn(fd int) (net.Conn, error) {
	pmiFiles.Lock()
	defer pmiFiles.Unlock()
	if pmiFiles.taken[fd] != nil {
		return nil, errDetail(ErrBadEnv, "PMI_FD=%d was already opened by this process: a process has one PMI connection", fd)
	}
	typ, err := syscall.GetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_TYPE)
	if err != nil {
		return nil, errDetail(ErrBadEnv, "PMI_FD=%d is not an open socket: %v", fd, err)
	}
	if typ != syscall.SOCK_STREAM {
		return nil, errDetail(ErrBadEnv, "PMI_FD=%d is a socket of type %d, not a stream", fd, typ)
	}
	f := os.NewFile(uintptr(fd), "PMI_FD")
	c, err := net.FileConn(f) // duplicates the descriptor
	if err != nil {
		return nil, errDetail(ErrBadEnv, "PMI_FD=%d: %v", fd, err)
	}
	if pmiFiles.taken == nil {
		pmiFiles.taken = map[int]*os.File{}
	}
	pmiFiles.taken[fd] = f
	return &fdSocket{Conn: c, fd: fd}, nil
}

// fdSocket is the connection over an inherited PMI descriptor. Its Close shuts
// the socket down (the launcher then reads end-of-file, though the original
// descriptor stays open) and closes the duplicate.
type fdSocket struct {
	net.Conn
	fd int
}

// Close shuts the socket down and closes the connection.
func (s *fdSocket) Close() error {
	syscall.Shutdown(s.fd, syscall.SHUT_RDWR)
	return s.Conn.Close()
}
