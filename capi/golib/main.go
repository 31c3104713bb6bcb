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

// eqOf returns the queue of slot, nil for noSlot.
func eqOf(slot C.uint32_t) (*portals.EQ, bool) {
	if uint32(slot) == noSlot {
		return nil, true
	}
	q, _, ok := lookup[*portals.EQ](uint32(slot))
	return q, ok
}

// ctOf returns the counter of slot, nil for noSlot.
func ctOf(slot C.uint32_t) (*portals.CT, bool) {
	if uint32(slot) == noSlot {
		return nil, true
	}
	c, _, ok := lookup[*portals.CT](uint32(slot))
	return c, ok
}

//export goptl_PTAlloc
func goptl_PTAlloc(slot C.uint32_t, options C.uint, eqSlot C.uint32_t, req C.ptl_pt_index_t, idx *C.ptl_pt_index_t) (r C.int) {
	const op = "PtlPTAlloc"
	defer guard(op, &r)
	ni, _, ok := lookup[*portals.NI](uint32(slot))
	if !ok {
		return badHandle(op, "NI")
	}
	q, ok := eqOf(eqSlot)
	if !ok {
		return badHandle(op, "event queue")
	}
	i, err := ptl.PTAlloc(ni, portals.PTOptions(options), q, portals.PTIndex(req))
	if err != nil {
		return rc(err)
	}
	*idx = C.ptl_pt_index_t(i)
	return C.PTL_OK
}

// ptCall runs one of PtlPTFree, PtlPTEnable, PtlPTDisable.
func ptCall(op string, slot C.uint32_t, idx C.ptl_pt_index_t, f func(*portals.NI, portals.PTIndex) error) (r C.int) {
	defer guard(op, &r)
	ni, _, ok := lookup[*portals.NI](uint32(slot))
	if !ok {
		return badHandle(op, "NI")
	}
	return rc(f(ni, portals.PTIndex(idx)))
}

//export goptl_PTFree
func goptl_PTFree(slot C.uint32_t, idx C.ptl_pt_index_t) C.int {
	return ptCall("PtlPTFree", slot, idx, ptl.PTFree)
}

//export goptl_PTEnable
func goptl_PTEnable(slot C.uint32_t, idx C.ptl_pt_index_t) C.int {
	return ptCall("PtlPTEnable", slot, idx, ptl.PTEnable)
}

//export goptl_PTDisable
func goptl_PTDisable(slot C.uint32_t, idx C.ptl_pt_index_t) C.int {
	return ptCall("PtlPTDisable", slot, idx, ptl.PTDisable)
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

//export goptl_MDBind
func goptl_MDBind(niSlot C.uint32_t, md *C.ptl_md_t, eqSlot, ctSlot C.uint32_t, slot C.uint32_t) (r C.int) {
	const op = "PtlMDBind"
	defer guard(op, &r)
	ni, _, ok := lookup[*portals.NI](uint32(niSlot))
	if !ok {
		return badHandle(op, "NI")
	}
	q, ok := eqOf(eqSlot)
	if !ok {
		return badHandle(op, "event queue")
	}
	c, ok := ctOf(ctSlot)
	if !ok {
		return badHandle(op, "counting event")
	}
	cm, err := memory(op, md.start, md.length, md.options)
	if err != nil {
		return rc(err)
	}
	m, err := ptl.MDBind(ni, portals.MDSpec{Start: cm.b, Iovecs: cm.iov, Addr: cm.addr, Length: cm.n,
		Options: portals.MDOptions(md.options &^ C.PTL_IOVEC), EQ: q, CT: c})
	if err != nil {
		return rc(err)
	}
	if !store(uint32(slot), m, ni) {
		_ = m.Release()
		return fail(op, portals.NoSpace, "handle slot %d out of range", uint32(slot))
	}
	return C.PTL_OK
}

//export goptl_MDRelease
func goptl_MDRelease(slot C.uint32_t) (r C.int) {
	const op = "PtlMDRelease"
	defer guard(op, &r)
	m, _, ok := lookup[*portals.MD](uint32(slot))
	if !ok {
		return badHandle(op, "MD")
	}
	if err := ptl.MDRelease(m); err != nil {
		return rc(err)
	}
	forget(uint32(slot))
	return C.PTL_OK
}

// meSpec translates a ptl_me_t.
func meSpec(op string, me *C.ptl_me_t, ctSlot C.uint32_t, logical bool) (portals.MESpec, C.int) {
	c, ok := ctOf(ctSlot)
	if !ok {
		return portals.MESpec{}, badHandle(op, "counting event")
	}
	cm, err := memory(op, me.start, me.length, me.options)
	if err != nil {
		return portals.MESpec{}, rc(err)
	}
	return portals.MESpec{Start: cm.b, Iovecs: cm.iov, Addr: cm.addr, Length: cm.n, CT: c, UID: portals.UID(me.uid),
		Options: portals.MEOptions(me.options &^ C.PTL_IOVEC), MatchID: getID(&me.match_id, logical),
		MatchBits: uint64(me.match_bits), IgnoreBits: uint64(me.ignore_bits), MinFree: uint64(me.min_free)}, C.PTL_OK
}

// leSpec translates a ptl_le_t.
func leSpec(op string, le *C.ptl_le_t, ctSlot C.uint32_t) (portals.LESpec, C.int) {
	c, ok := ctOf(ctSlot)
	if !ok {
		return portals.LESpec{}, badHandle(op, "counting event")
	}
	cm, err := memory(op, le.start, le.length, le.options)
	if err != nil {
		return portals.LESpec{}, rc(err)
	}
	return portals.LESpec{Start: cm.b, Iovecs: cm.iov, Addr: cm.addr, Length: cm.n, CT: c, UID: portals.UID(le.uid),
		Options: portals.MEOptions(le.options &^ C.PTL_IOVEC)}, C.PTL_OK
}

// appendEntry appends an entry with append (the engine call) in slot, under
// handle: the entry is known under handle before the engine can unlink it, and
// forgotten (its handle freed by the shim) when the engine does; an entry
// unlinked during the append itself (it claimed an unexpected message) is
// appended and gone at once, as in the reference.
func appendEntry(op string, ni *portals.NI, slot, handle uint32, appendFn func(onUnlink func()) (*portals.ME, error)) C.int {
	p := slotOf(slot, true)
	if p == nil {
		return fail(op, portals.NoSpace, "handle slot %d out of range", slot)
	}
	logical := ni.Logical()
	placeholder := &entry{ni: ni, logical: logical, handle: handle}
	p.Store(placeholder)
	h, err := appendFn(func() { entryGone(slot, handle) })
	if err != nil {
		p.CompareAndSwap(placeholder, nil)
		return rc(err)
	}
	// Fails when the engine already unlinked the entry: the handle is then freed.
	p.CompareAndSwap(placeholder, &entry{obj: h, ni: ni, logical: logical, handle: handle})
	return C.PTL_OK
}

//export goptl_MEAppend
func goptl_MEAppend(niSlot C.uint32_t, idx C.ptl_pt_index_t, me *C.ptl_me_t, ctSlot C.uint32_t, list C.int,
	userPtr C.uint64_t, slot, handle C.uint32_t) (r C.int) {
	const op = "PtlMEAppend"
	defer guard(op, &r)
	ni, e, ok := lookup[*portals.NI](uint32(niSlot))
	if !ok {
		return badHandle(op, "NI")
	}
	s, code := meSpec(op, me, ctSlot, e.logical)
	if code != C.PTL_OK {
		return code
	}
	return appendEntry(op, ni, uint32(slot), uint32(handle), func(onUnlink func()) (*portals.ME, error) {
		s.OnUnlink = onUnlink
		return ptl.MEAppend(ni, portals.PTIndex(idx), s, portals.List(list), uint64(userPtr))
	})
}

//export goptl_LEAppend
func goptl_LEAppend(niSlot C.uint32_t, idx C.ptl_pt_index_t, le *C.ptl_le_t, ctSlot C.uint32_t, list C.int,
	userPtr C.uint64_t, slot, handle C.uint32_t) (r C.int) {
	const op = "PtlLEAppend"
	defer guard(op, &r)
	ni, _, ok := lookup[*portals.NI](uint32(niSlot))
	if !ok {
		return badHandle(op, "NI")
	}
	s, code := leSpec(op, le, ctSlot)
	if code != C.PTL_OK {
		return code
	}
	return appendEntry(op, ni, uint32(slot), uint32(handle), func(onUnlink func()) (*portals.ME, error) {
		s.OnUnlink = onUnlink
		return ptl.LEAppend(ni, portals.PTIndex(idx), s, portals.List(list), uint64(userPtr))
	})
}

// goptl_MEUnlink serves PtlMEUnlink and PtlLEUnlink of handle (in slot). An
// entry the engine already unlinked is no longer known: PTL_ARG_INVALID, as
// the reference answers for a handle whose entry was freed.
//
//export goptl_MEUnlink
func goptl_MEUnlink(slot, handle C.uint32_t, le C.int) (r C.int) {
	op := "PtlMEUnlink"
	if le != 0 {
		op = "PtlLEUnlink"
	}
	defer guard(op, &r)
	h, e, ok := lookup[*portals.ME](uint32(slot))
	if !ok || e.handle != uint32(handle) {
		return badHandle(op, "entry")
	}
	var err error
	if le != 0 {
		err = ptl.LEUnlink(h)
	} else {
		err = ptl.MEUnlink(h)
	}
	if err != nil {
		return rc(err)
	}
	forgetHandle(uint32(slot), uint32(handle))
	return C.PTL_OK
}

//export goptl_MESearch
func goptl_MESearch(niSlot C.uint32_t, idx C.ptl_pt_index_t, me *C.ptl_me_t, ctSlot C.uint32_t, sop C.int,
	userPtr C.uint64_t) (r C.int) {
	const op = "PtlMESearch"
	defer guard(op, &r)
	ni, e, ok := lookup[*portals.NI](uint32(niSlot))
	if !ok {
		return badHandle(op, "NI")
	}
	s, code := meSpec(op, me, ctSlot, e.logical)
	if code != C.PTL_OK {
		return code
	}
	return rc(ptl.MESearch(ni, portals.PTIndex(idx), s, portals.SearchOp(sop), uint64(userPtr)))
}

//export goptl_LESearch
func goptl_LESearch(niSlot C.uint32_t, idx C.ptl_pt_index_t, le *C.ptl_le_t, ctSlot C.uint32_t, sop C.int,
	userPtr C.uint64_t) (r C.int) {
	const op = "PtlLESearch"
	defer guard(op, &r)
	ni, _, ok := lookup[*portals.NI](uint32(niSlot))
	if !ok {
		return badHandle(op, "NI")
	}
	s, code := leSpec(op, le, ctSlot)
	if code != C.PTL_OK {
		return code
	}
	return rc(ptl.LESearch(ni, portals.PTIndex(idx), s, portals.SearchOp(sop), uint64(userPtr)))
}

//export goptl_EQAlloc
func goptl_EQAlloc(niSlot C.uint32_t, count C.ptl_size_t, slot C.uint32_t) (r C.int) {
	const op = "PtlEQAlloc"
	defer guard(op, &r)
	ni, _, ok := lookup[*portals.NI](uint32(niSlot))
	if !ok {
		return badHandle(op, "NI")
	}
	if count > 1<<30 {
		return fail(op, portals.NoSpace, "event queue of %d events", uint64(count))
	}
	q, err := ptl.EQAlloc(ni, int(count))
	if err != nil {
		return rc(err)
	}
	if !store(uint32(slot), q, ni) {
		_ = q.Free()
		return fail(op, portals.NoSpace, "handle slot %d out of range", uint32(slot))
	}
	return C.PTL_OK
}

//export goptl_EQFree
func goptl_EQFree(slot C.uint32_t) (r C.int) {
	const op = "PtlEQFree"
	defer guard(op, &r)
	q, _, ok := lookup[*portals.EQ](uint32(slot))
	if !ok {
		return badHandle(op, "event queue")
	}
	if err := ptl.EQFree(q); err != nil {
		return rc(err)
	}
	forget(uint32(slot))
	return C.PTL_OK
}

// eventResult writes the event of a get/wait/poll that returned err: an event
// comes with PTL_OK and with PTL_EQ_DROPPED.
func eventResult(dst *C.ptl_event_t, ev *portals.Event, logical bool, err error) C.int {
	code := rc(err)
	if (code == C.PTL_OK || code == C.PTL_EQ_DROPPED) && dst != nil {
		fillEvent(dst, ev, logical)
	}
	return code
}

//export goptl_EQGet
func goptl_EQGet(slot C.uint32_t, ev *C.ptl_event_t, wait C.int) (r C.int) {
	op := "PtlEQGet"
	if wait != 0 {
		op = "PtlEQWait"
	}
	defer guard(op, &r)
	q, e, ok := lookup[*portals.EQ](uint32(slot))
	if !ok {
		return badHandle(op, "event queue")
	}
	var (
		v   portals.Event
		err error
	)
	if wait != 0 {
		v, err = eqWait(q)
	} else {
		v, err = ptl.EQGet(q)
	}
	return eventResult(ev, &v, e.logical, err)
}

//export goptl_EQPoll
func goptl_EQPoll(slots *C.uint32_t, size C.uint, timeout C.ptl_time_t, ev *C.ptl_event_t, which *C.uint) (r C.int) {
	const op = "PtlEQPoll"
	defer guard(op, &r)
	if size == 0 || slots == nil || size > maxSlots {
		return fail(op, portals.ArgInvalid, "%d event queues", uint(size))
	}
	ss := unsafe.Slice(slots, int(size))
	qs := make([]*portals.EQ, len(ss))
	es := make([]*entry, len(ss))
	for i, s := range ss {
		q, e, ok := lookup[*portals.EQ](uint32(s))
		if !ok {
			return badHandle(op, "event queue")
		}
		qs[i], es[i] = q, e
	}
	v, i, err := eqPoll(qs, uint32(timeout))
	logical := false
	if i >= 0 && i < len(es) {
		logical = es[i].logical
		if which != nil {
			*which = C.uint(i)
		}
	}
	return eventResult(ev, &v, logical, err)
}

//export goptl_CTAlloc
func goptl_CTAlloc(niSlot C.uint32_t, slot C.uint32_t) (r C.int) {
	const op = "PtlCTAlloc"
	defer guard(op, &r)
	ni, _, ok := lookup[*portals.NI](uint32(niSlot))
	if !ok {
		return badHandle(op, "NI")
	}
	c, err := ptl.CTAlloc(ni)
	if err != nil {
		return rc(err)
	}
	if !store(uint32(slot), c, ni) {
		_ = c.Free()
		return fail(op, portals.NoSpace, "handle slot %d out of range", uint32(slot))
	}
	return C.PTL_OK
}

//export goptl_CTFree
func goptl_CTFree(slot C.uint32_t) (r C.int) {
	const op = "PtlCTFree"
	defer guard(op, &r)
	c, _, ok := lookup[*portals.CT](uint32(slot))
	if !ok {
		return badHandle(op, "counting event")
	}
	if err := ptl.CTFree(c); err != nil {
		return rc(err)
	}
	forget(uint32(slot))
	return C.PTL_OK
}

//export goptl_CTCancelTriggered
func goptl_CTCancelTriggered(slot C.uint32_t) (r C.int) {
	const op = "PtlCTCancelTriggered"
	defer guard(op, &r)
	c, _, ok := lookup[*portals.CT](uint32(slot))
	if !ok {
		return badHandle(op, "counting event")
	}
	return rc(ptl.CTCancelTriggered(c))
}

//export goptl_CTGet
func goptl_CTGet(slot C.uint32_t, ev *C.ptl_ct_event_t) (r C.int) {
	const op = "PtlCTGet"
	defer guard(op, &r)
	c, _, ok := lookup[*portals.CT](uint32(slot))
	if !ok {
		return badHandle(op, "counting event")
	}
	v, err := ptl.CTGet(c)
	if err != nil {
		return rc(err)
	}
	fillCT(ev, v)
	return C.PTL_OK
}

// goptl_CTValueAddr writes where the counter at slot keeps its value, laid out
// as ptl_ct_event_t outside the Go heap (ptl.CTValueAddr): the shim reads it
// there to answer PtlCTGet, PtlCTWait and PtlCTPoll without calling in. The
// address is meaningful until the counter is freed or its NI finalized.
//
//export goptl_CTValueAddr
func goptl_CTValueAddr(slot C.uint32_t, addr *C.uintptr_t) (r C.int) {
	const op = "PtlCTAlloc"
	defer guard(op, &r)
	c, _, ok := lookup[*portals.CT](uint32(slot))
	if !ok {
		return badHandle(op, "counting event")
	}
	if addr == nil {
		return fail(op, portals.ArgInvalid, "no place for the address")
	}
	a, err := ptl.CTValueAddr(c)
	if err != nil {
		return rc(err)
	}
	*addr = C.uintptr_t(a)
	return C.PTL_OK
}

//export goptl_CTWait
func goptl_CTWait(slot C.uint32_t, test C.ptl_size_t, ev *C.ptl_ct_event_t) (r C.int) {
	const op = "PtlCTWait"
	defer guard(op, &r)
	c, _, ok := lookup[*portals.CT](uint32(slot))
	if !ok {
		return badHandle(op, "counting event")
	}
	v, err := ctWait(c, uint64(test))
	code := rc(err)
	if code == C.PTL_OK {
		fillCT(ev, v)
	}
	return code
}

//export goptl_CTPoll
func goptl_CTPoll(slots *C.uint32_t, tests *C.ptl_size_t, size C.uint, timeout C.ptl_time_t, ev *C.ptl_ct_event_t,
	which *C.uint) (r C.int) {
	const op = "PtlCTPoll"
	defer guard(op, &r)
	if size == 0 || slots == nil || tests == nil || size > maxSlots {
		return fail(op, portals.ArgInvalid, "%d counting events", uint(size))
	}
	ss := unsafe.Slice(slots, int(size))
	ts := unsafe.Slice(tests, int(size))
	cs := make([]*portals.CT, len(ss))
	tv := make([]uint64, len(ss))
	for i, s := range ss {
		c, _, ok := lookup[*portals.CT](uint32(s))
		if !ok {
			return badHandle(op, "counting event")
		}
		cs[i], tv[i] = c, uint64(ts[i])
	}
	v, i, err := ctPoll(cs, tv, uint32(timeout))
	code := rc(err)
	if code == C.PTL_OK {
		fillCT(ev, v)
		if which != nil && i >= 0 {
			*which = C.uint(i)
		}
	}
	return code
}

//export goptl_CTSet
func goptl_CTSet(slot C.uint32_t, success, failure C.ptl_size_t, inc C.int) (r C.int) {
	op := "PtlCTSet"
	if inc != 0 {
		op = "PtlCTInc"
	}
	defer guard(op, &r)
	c, _, ok := lookup[*portals.CT](uint32(slot))
	if !ok {
		return badHandle(op, "counting event")
	}
	v := portals.CTEvent{Success: uint64(success), Failure: uint64(failure)}
	if inc != 0 {
		return rc(ptl.CTInc(c, v))
	}
	return rc(ptl.CTSet(c, v))
}

//export goptl_TriggeredCTSet
func goptl_TriggeredCTSet(slot C.uint32_t, success, failure C.ptl_size_t, inc C.int, trig C.uint32_t,
	threshold C.ptl_size_t) (r C.int) {
	op := "PtlTriggeredCTSet"
	if inc != 0 {
		op = "PtlTriggeredCTInc"
	}
	defer guard(op, &r)
	c, _, ok := lookup[*portals.CT](uint32(slot))
	if !ok {
		return badHandle(op, "counting event")
	}
	t, _, ok := lookup[*portals.CT](uint32(trig))
	if !ok {
		return badHandle(op, "trigger counting event")
	}
	v := portals.CTEvent{Success: uint64(success), Failure: uint64(failure)}
	if inc != 0 {
		return rc(ptl.TriggeredCTInc(c, v, t, uint64(threshold)))
	}
	return rc(ptl.TriggeredCTSet(c, v, t, uint64(threshold)))
}

// trigger returns the counter of a triggered operation (trig noSlot: none).
func trigger(trig C.uint32_t) (*portals.CT, bool) {
	if uint32(trig) == noSlot {
		return nil, true
	}
	t, _, ok := lookup[*portals.CT](uint32(trig))
	return t, ok
}

// goptl_Put serves PtlPut and PtlTriggeredPut (trig noSlot: not triggered).
//
//export goptl_Put
func goptl_Put(mdSlot C.uint32_t, loff, length C.ptl_size_t, ack C.int, target C.uint64_t, idx C.ptl_pt_index_t,
	match C.ptl_match_bits_t, roff C.ptl_size_t, userPtr C.uint64_t, hdr C.ptl_hdr_data_t,
	trig C.uint32_t, threshold C.ptl_size_t) (r C.int) {
	op := "PtlPut"
	defer guard(op, &r)
	m, e, ok := lookup[*portals.MD](uint32(mdSlot))
	if !ok {
		return badHandle(op, "MD")
	}
	t, ok := trigger(trig)
	if !ok {
		return badHandle("PtlTriggeredPut", "trigger counting event")
	}
	id := unpackID(uint64(target), e.logical)
	if t != nil {
		return rc(ptl.TriggeredPut(m, uint64(loff), uint64(length), portals.AckReq(ack), id, portals.PTIndex(idx),
			uint64(match), uint64(roff), uint64(userPtr), uint64(hdr), t, uint64(threshold)))
	}
	return rc(ptl.Put(m, uint64(loff), uint64(length), portals.AckReq(ack), id, portals.PTIndex(idx),
		uint64(match), uint64(roff), uint64(userPtr), uint64(hdr)))
}

// goptl_Get serves PtlGet and PtlTriggeredGet.
//
//export goptl_Get
func goptl_Get(mdSlot C.uint32_t, loff, length C.ptl_size_t, target C.uint64_t, idx C.ptl_pt_index_t,
	match C.ptl_match_bits_t, roff C.ptl_size_t, userPtr C.uint64_t, trig C.uint32_t, threshold C.ptl_size_t) (r C.int) {
	op := "PtlGet"
	defer guard(op, &r)
	m, e, ok := lookup[*portals.MD](uint32(mdSlot))
	if !ok {
		return badHandle(op, "MD")
	}
	t, ok := trigger(trig)
	if !ok {
		return badHandle("PtlTriggeredGet", "trigger counting event")
	}
	id := unpackID(uint64(target), e.logical)
	if t != nil {
		return rc(ptl.TriggeredGet(m, uint64(loff), uint64(length), id, portals.PTIndex(idx), uint64(match),
			uint64(roff), uint64(userPtr), t, uint64(threshold)))
	}
	return rc(ptl.Get(m, uint64(loff), uint64(length), id, portals.PTIndex(idx), uint64(match), uint64(roff),
		uint64(userPtr)))
}

// goptl_Atomic serves PtlAtomic and PtlTriggeredAtomic.
//
//export goptl_Atomic
func goptl_Atomic(mdSlot C.uint32_t, loff, length C.ptl_size_t, ack C.int, target C.uint64_t, idx C.ptl_pt_index_t,
	match C.ptl_match_bits_t, roff C.ptl_size_t, userPtr C.uint64_t, hdr C.ptl_hdr_data_t, aop, dt C.int,
	trig C.uint32_t, threshold C.ptl_size_t) (r C.int) {
	op := "PtlAtomic"
	defer guard(op, &r)
	m, e, ok := lookup[*portals.MD](uint32(mdSlot))
	if !ok {
		return badHandle(op, "MD")
	}
	t, ok := trigger(trig)
	if !ok {
		return badHandle("PtlTriggeredAtomic", "trigger counting event")
	}
	id := unpackID(uint64(target), e.logical)
	if t != nil {
		return rc(ptl.TriggeredAtomic(m, uint64(loff), uint64(length), portals.AckReq(ack), id, portals.PTIndex(idx),
			uint64(match), uint64(roff), uint64(userPtr), uint64(hdr), portals.AtomicOp(aop), portals.AtomicType(dt),
			t, uint64(threshold)))
	}
	return rc(ptl.Atomic(m, uint64(loff), uint64(length), portals.AckReq(ack), id, portals.PTIndex(idx),
		uint64(match), uint64(roff), uint64(userPtr), uint64(hdr), portals.AtomicOp(aop), portals.AtomicType(dt)))
}

// goptl_FetchAtomic serves PtlFetchAtomic, PtlSwap and their triggered forms
// (swap set: a swap with operand).
//
//export goptl_FetchAtomic
func goptl_FetchAtomic(getSlot C.uint32_t, goff C.ptl_size_t, putSlot C.uint32_t, poff, length C.ptl_size_t,
	target C.uint64_t, idx C.ptl_pt_index_t, match C.ptl_match_bits_t, roff C.ptl_size_t, userPtr C.uint64_t,
	hdr C.ptl_hdr_data_t, swap C.int, operand unsafe.Pointer, aop, dt C.int, trig C.uint32_t,
	threshold C.ptl_size_t) (r C.int) {
	op := "PtlFetchAtomic"
	if swap != 0 {
		op = "PtlSwap"
	}
	defer guard(op, &r)
	gm, e, ok := lookup[*portals.MD](uint32(getSlot))
	if !ok {
		return badHandle(op, "get MD")
	}
	pm, _, ok := lookup[*portals.MD](uint32(putSlot))
	if !ok {
		return badHandle(op, "put MD")
	}
	t, ok := trigger(trig)
	if !ok {
		return badHandle(op, "trigger counting event")
	}
	id := unpackID(uint64(target), e.logical)
	ty := portals.AtomicType(dt)
	if swap != 0 {
		var opnd []byte
		if n := ty.Size(); operand != nil && n > 0 {
			opnd = C.GoBytes(operand, C.int(n))
		}
		if t != nil {
			return rc(ptl.TriggeredSwap(gm, uint64(goff), pm, uint64(poff), uint64(length), id, portals.PTIndex(idx),
				uint64(match), uint64(roff), uint64(userPtr), uint64(hdr), opnd, portals.AtomicOp(aop), ty,
				t, uint64(threshold)))
		}
		return rc(ptl.Swap(gm, uint64(goff), pm, uint64(poff), uint64(length), id, portals.PTIndex(idx),
			uint64(match), uint64(roff), uint64(userPtr), uint64(hdr), opnd, portals.AtomicOp(aop), ty))
	}
	if t != nil {
		return rc(ptl.TriggeredFetchAtomic(gm, uint64(goff), pm, uint64(poff), uint64(length), id,
			portals.PTIndex(idx), uint64(match), uint64(roff), uint64(userPtr), uint64(hdr), portals.AtomicOp(aop), ty,
			t, uint64(threshold)))
	}
	return rc(ptl.FetchAtomic(gm, uint64(goff), pm, uint64(poff), uint64(length), id, portals.PTIndex(idx),
		uint64(match), uint64(roff), uint64(userPtr), uint64(hdr), portals.AtomicOp(aop), ty))
}

//export goptl_Bundle
func goptl_Bundle(slot C.uint32_t, end C.int) (r C.int) {
	op := "PtlStartBundle"
	if end != 0 {
		op = "PtlEndBundle"
	}
	defer guard(op, &r)
	ni, _, ok := lookup[*portals.NI](uint32(slot))
	if !ok {
		return badHandle(op, "NI")
	}
	if end != 0 {
		return rc(ptl.EndBundle(ni))
	}
	return rc(ptl.StartBundle(ni))
}

//export goptl_AtomicSync
func goptl_AtomicSync() (r C.int) {
	defer guard("PtlAtomicSync", &r)
	return rc(ptl.AtomicSync())
}

//export goptl_CacheStats
func goptl_CacheStats(slot C.uint32_t, out *C.goportals_cache_stats_t) (r C.int) {
	const op = "goportals_cache_stats"
	defer guard(op, &r)
	ni, _, ok := lookup[*portals.NI](uint32(slot))
	if !ok {
		return badHandle(op, "NI")
	}
	s := ni.CacheStats()
	*out = C.goportals_cache_stats_t{hits: C.uint64_t(s.Hits), misses: C.uint64_t(s.Misses),
		evictions: C.uint64_t(s.Evictions), invalidations: C.uint64_t(s.Invalidations),
		stale_in_use: C.uint64_t(s.StaleInUse), fallbacks: C.uint64_t(s.Fallbacks),
		stale_hits: C.uint64_t(s.StaleHits), entries: C.uint64_t(s.Entries), pinned_bytes: C.uint64_t(s.PinnedBytes)}
	return C.PTL_OK
}
