package main

import (
	"fmt"

	"github.com/goportals/goportals/internal/envknob"
	"github.com/goportals/goportals/portals"
	"github.com/goportals/goportals/ptlerr"
)

// programOwnsPMI decides whether the program, not the library, uses the PMI
// launcher's connection: PTL_CAPI_PMI says so (program, library), or, when it
// is auto or unset, detected does (the shim found a PMI or MPI entry point in
// the process). A value it does not know is an error naming the variable.
func programOwnsPMI(detected bool, lookup func(envknob.Name) (string, bool)) (bool, error) {
	v, _ := lookup(envknob.CAPIPMI)
	switch v {
	case "", "auto":
		return detected, nil
	case "program":
		return true, nil
	case "library":
		return false, nil
	}
	return false, ptlerr.New("PtlInit", portals.Fail,
		fmt.Errorf("%s=%q: want auto, program or library", envknob.CAPIPMI, v))
}
