package bootstrap

import (
	"os"
	"syscall"
)

// launchSupported reports whether Launch can run on this platform.
func launchSupported() error { return nil }

// sysProcAttr puts a rank in a process group of its own (so the whole group can
// be signalled) and kills it if the launcher dies.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// signalGroup sends sig to the process group led by pid.
func signalGroup(pid int, sig syscall.Signal) error {
	err := syscall.Kill(-pid, sig)
	if err == syscall.ESRCH {
		return nil
	}
	return err
}

// exitOf decodes how a process ended: its exit code, or the signal that killed it.
func exitOf(ps *os.ProcessState) (code int, sig syscall.Signal) {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return -1, ws.Signal()
	}
	return ps.ExitCode(), 0
}

// toSignal converts a forwarded os.Signal to a syscall.Signal.
func toSignal(s os.Signal) (syscall.Signal, bool) {
	sig, ok := s.(syscall.Signal)
	return sig, ok
}
