package main

import (
	"os"
	"sync"
)

// pmiConnVars are the variables through which a PMI launcher (hydra's mpiexec,
// Slurm with PMI-2) hands each rank its one connection (PMI_FD) or its address
// (PMI_PORT, PMI_ID).
var pmiConnVars = []string{"PMI_FD", "PMI_PORT", "PMI_ID"}

// envMu serializes hiding and restoring the PMI variables.
var envMu sync.Mutex

// withoutPMI runs fn with the launcher's PMI connection variables removed from
// the environment, then puts them back. PtlInit uses it when the C program
// speaks PMI itself (Sandia OpenSHMEM's pmi-simple, an MPI): the launcher gives
// each rank one PMI connection, and two clients on it would interleave their
// requests and answers. The library then starts as a lone process (or joins
// through Open MPI's or Slurm's variables) and the program gives logical NIs
// their map with PtlSetMap, as such programs do.
func withoutPMI(fn func() error) error {
	envMu.Lock()
	defer envMu.Unlock()
	saved := map[string]string{}
	for _, k := range pmiConnVars {
		if v, ok := os.LookupEnv(k); ok {
			saved[k] = v
			_ = os.Unsetenv(k)
		}
	}
	defer func() {
		for k, v := range saved {
			_ = os.Setenv(k, v)
		}
	}()
	return fn()
}
