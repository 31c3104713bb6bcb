//go:build !linux

package bootstrap

import "net"

// fdConn reports that inherited PMI descriptors are used on Linux only.
func fdConn(fd int) (net.Conn, error) {
	return nil, errDetail(ErrNotSupported, "PMI over PMI_FD is implemented on Linux only")
}
