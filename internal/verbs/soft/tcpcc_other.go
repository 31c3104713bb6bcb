//go:build !linux

package soft

import "fmt"

// setCongestion leaves the socket's congestion control to the system where
// TCP_CONGESTION is not used.
func setCongestion(fd int) error { return nil }

// checkCongestion refuses a congestion control the user named: it cannot be
// set on this platform. (Open fails first where the provider does not run.)
func checkCongestion() error {
	if name, explicit := tcpCC(); name != "" && explicit {
		return fmt.Errorf("%s=%q: choosing the congestion control is not supported on this platform", EnvTCPCC, name)
	}
	return nil
}

// SetTCPCongestion does what the provider's links do with a socket: nothing
// here.
func SetTCPCongestion(fd int) error { return nil }
