package soft

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// setCongestion gives the link's socket fd the congestion control tcpCC names.
func setCongestion(fd int) error {
	name, explicit := tcpCC()
	if name == "" {
		return nil
	}
	if err := unix.SetsockoptString(fd, unix.IPPROTO_TCP, unix.TCP_CONGESTION, name); err != nil && explicit {
		return fmt.Errorf("%s=%q: the kernel refuses it (see net.ipv4.tcp_allowed_congestion_control): %w", EnvTCPCC, name, err)
	}
	return nil
}

// checkCongestion tries a congestion control the user named on a socket of its
// own, so that Connect fails at once rather than the link after it.
func checkCongestion() error {
	if name, explicit := tcpCC(); name == "" || !explicit {
		return nil
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil // no probe: the link's own setting tells
	}
	defer unix.Close(fd)
	return setCongestion(fd)
}

// SetTCPCongestion gives the TCP socket fd the congestion control the
// provider's links use (PTL_SOFT_TCP_CC), so that a baseline measured beside
// them (ptlbench's raw stream) runs the same.
func SetTCPCongestion(fd int) error { return setCongestion(fd) }
