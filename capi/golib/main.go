package main

/*
#cgo CFLAGS: -I${SRCDIR}/../include
#include <stdint.h>
#include <portals4.h>
#include <portals4_goportals.h>
#ifndef GOPTL_RELEASE_FN
#define GOPTL_RELEASE_FN
typedef void (*goptl_release_fn)(uint32_t handle);
#endif
*/
import "C"

import (
	"unsafe"

	"github.com/goportals/goportals/internal/bootstrap"
	"github.com/goportals/goportals/internal/envknob"
	"github.com/goportals/goportals/portals"
	"github.com/goportals/goportals/portals/ptl"
)

// main is never run: the package is a c-shared library.
func main() {}

// goptl_Init serves PtlInit. release is the shim's function that frees the
// slot of an entry the engine unlinked itself (see entryGone). ownPMI is set
// when the shim found a PMI client of the program's own (program_speaks_pmi);
// PTL_CAPI_PMI may say otherwise (programOwnsPMI). When the program owns PMI,
// the library leaves the launcher's PMI connection to it (bootstrap.LeavePMI)
// and such programs give their logical NIs a map with PtlSetMap.
//
//export goptl_Init
func goptl_Init(ownPMI C.int, release C.goptl_release_fn) (r C.int) {
	defer guard("PtlInit", &r)
	setRelease(release)
	// Programs (Open MPI's components) call PtlInit and PtlFini more than once,
	// and a launcher admits one join per rank: the join stays for the life of
	// the process, and goptl_Exit ends it.
	bootstrap.KeepShared()
	own, err := programOwnsPMI(ownPMI != 0, envknob.Lookup)
	if err != nil {
		return rc(err)
	}
	bootstrap.LeavePMI(own)
	return rc(ptl.Init())
}

// goptl_Exit ends the process's join of its job at exit (the shim calls it from
// an atexit handler) when no PtlInit is left open.
//
//export goptl_Exit
func goptl_Exit() {
	defer func() { _ = recover() }()
	_ = bootstrap.CloseShared()
}

//export goptl_Fini
func goptl_Fini(last C.int) {
	defer func() { _ = recover() }()
	ptl.Fini()
	if last != 0 {
		sweep(nil)
	}
}

//export goptl_NIInit
func goptl_NIInit(slot C.uint32_t, iface C.ptl_interface_t, options C.uint, pid C.ptl_pid_t,
	desired, actual *C.ptl_ni_limits_t, got *C.uint32_t) (r C.int) {
	const op = "PtlNIInit"
	defer guard(op, &r)
	ni, lim, err := ptl.NIInit(portals.Interface(iface), portals.NIOptions(options), portals.PID(pid), fromLimits(desired))
	if err != nil {
		return rc(err)
	}
	tableMu.Lock()
	s, known := niSlots[ni]
	if !known {
		s = uint32(slot)
		niSlots[ni] = s
	}
	tableMu.Unlock()
	if !known && !store(s, ni, ni) {
		tableMu.Lock()
		delete(niSlots, ni)
		tableMu.Unlock()
		_ = ni.Fini()
		return fail(op, portals.NoSpace, "handle slot %d out of range", s)
	}
	tableMu.Lock()
	load(s).refs++
	tableMu.Unlock()
	toLimits(actual, lim)
	*got = C.uint32_t(s)
	return C.PTL_OK
}

//export goptl_NIFini
func goptl_NIFini(slot C.uint32_t, gone *C.int) (r C.int) {
	const op = "PtlNIFini"
	defer guard(op, &r)
	ni, e, ok := lookup[*portals.NI](uint32(slot))
	if !ok {
		return badHandle(op, "NI")
	}
	if err := ptl.NIFini(ni); err != nil {
		return rc(err)
	}
	tableMu.Lock()
	e.refs--
	last := e.refs <= 0
	tableMu.Unlock()
	if last {
		sweep(ni)
		*gone = 1
	}
	return C.PTL_OK
}

//export goptl_NIStatus
func goptl_NIStatus(slot C.uint32_t, sr C.int, status *C.ptl_sr_value_t) (r C.int) {
	const op = "PtlNIStatus"
	defer guard(op, &r)
	ni, _, ok := lookup[*portals.NI](uint32(slot))
	if !ok {
		return badHandle(op, "NI")
	}
	v, err := ptl.NIStatus(ni, portals.SR(sr))
	if err != nil {
		return rc(err)
	}
	*status = C.ptl_sr_value_t(cint(int(min(v, uint64(^uint32(0)>>1)))))
	return C.PTL_OK
}

//export goptl_SetMap
func goptl_SetMap(slot C.uint32_t, size C.ptl_size_t, mapping *C.ptl_process_t) (r C.int) {
	const op = "PtlSetMap"
	defer guard(op, &r)
	ni, _, ok := lookup[*portals.NI](uint32(slot))
	if !ok {
		return badHandle(op, "NI")
	}
	if size > maxSlots {
		return fail(op, portals.ArgInvalid, "map of %d entries", uint64(size))
	}
	if size > 0 && mapping == nil {
		return fail(op, portals.ArgInvalid, "NULL mapping")
	}
	m := make([]portals.ProcessID, int(size))
	if size > 0 {
		src := unsafe.Slice(mapping, int(size))
		for i := range m {
			m[i] = getID(&src[i], false)
		}
	}
	return rc(ptl.SetMap(ni, m))
}

//export goptl_GetMap
func goptl_GetMap(slot C.uint32_t, size C.ptl_size_t, mapping *C.ptl_process_t, actual *C.ptl_size_t) (r C.int) {
	const op = "PtlGetMap"
	defer guard(op, &r)
	ni, _, ok := lookup[*portals.NI](uint32(slot))
	if !ok {
		return badHandle(op, "NI")
	}
	if size > 0 && mapping == nil {
		return fail(op, portals.ArgInvalid, "NULL mapping with map_size %d", uint64(size))
	}
	if size > maxSlots {
		size = maxSlots
	}
	m := make([]portals.ProcessID, int(size))
	full, err := ptl.GetMap(ni, m)
	if err != nil {
		return rc(err)
	}
	if size > 0 {
		dst := unsafe.Slice(mapping, int(size))
		for i := 0; i < len(m) && i < full; i++ {
			putID(&dst[i], m[i], false)
		}
	}
	if actual != nil {
		*actual = C.ptl_size_t(full)
	}
	return C.PTL_OK
}

//export goptl_GetUid
func goptl_GetUid(slot C.uint32_t, uid *C.ptl_uid_t) (r C.int) {
	const op = "PtlGetUid"
	defer guard(op, &r)
	ni, _, ok := lookup[*portals.NI](uint32(slot))
	if !ok {
		return badHandle(op, "NI")
	}
	u, err := ptl.GetUid(ni)
	if err != nil {
		return rc(err)
	}
	*uid = C.ptl_uid_t(u)
	return C.PTL_OK
}

//export goptl_GetId
func goptl_GetId(slot C.uint32_t, phys C.int, id *C.ptl_process_t) (r C.int) {
	op := "PtlGetId"
	if phys != 0 {
		op = "PtlGetPhysId"
	}
	defer guard(op, &r)
	ni, e, ok := lookup[*portals.NI](uint32(slot))
	if !ok {
		return badHandle(op, "NI")
	}
	var (
		v   portals.ProcessID
		err error
	)
	if phys != 0 {
		v, err = ptl.GetPhysId(ni)
	} else {
		v, err = ptl.GetId(ni)
	}
	if err != nil {
		return rc(err)
	}
	putID(id, v, e.logical && phys == 0)
	return C.PTL_OK
}
