package main

/*
#cgo CFLAGS: -I${SRCDIR}/../include
#include <stdint.h>
#include <portals4.h>
#include <portals4_goportals.h>
*/
import "C"

import (
	"github.com/goportals/goportals/portals"
	"github.com/goportals/goportals/portals/ptl"
)

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
