//go:build !linux

package bootstrap

import (
	"os"
	"syscall"
)

// launchSupported reports whether Launch can run on this platform.
func launchSupported() error {
	return errDetail(ErrNotSupported, "Launch needs Linux process groups")
}

func sysProcAttr() *syscall.SysProcAttr { return nil }

func signalGroup(pid int, sig syscall.Signal) error { return launchSupported() }

func exitOf(ps *os.ProcessState) (code int, sig syscall.Signal) { return ps.ExitCode(), 0 }

func toSignal(s os.Signal) (syscall.Signal, bool) {
	sig, ok := s.(syscall.Signal)
	return sig, ok
}
