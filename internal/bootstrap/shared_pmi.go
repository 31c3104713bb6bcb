package bootstrap

import "sync/atomic"

// leavePMI is set while the process's own PMI client holds the launcher's
// connection (see LeavePMI).
var leavePMI atomic.Bool

// LeavePMI tells Open whether to leave the PMI launcher's connection (PMI_FD,
// or PMI_PORT and PMI_ID) to the program: a launcher such as hydra gives each
// rank one connection, and a program that speaks PMI itself (an MPI, Sandia
// OpenSHMEM) holds it; a second client on it would interleave its requests and
// answers with the program's. Open then joins as if no PMI launcher were there
// (a lone process, or through Open MPI's or Slurm's variables). The decision is
// passed here rather than by editing the environment, which other threads may
// be reading.
func LeavePMI(leave bool) { leavePMI.Store(leave) }

// pmiLeft reports whether name is a PMI connection variable Open must not see.
func pmiLeft(name string) bool {
	if !leavePMI.Load() {
		return false
	}
	switch name {
	case "PMI_FD", "PMI_PORT", "PMI_ID":
		return true
	}
	return false
}
