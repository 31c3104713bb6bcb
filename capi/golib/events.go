package main

/*
#cgo CFLAGS: -I${SRCDIR}/../include
#include <stdint.h>
#include <portals4.h>
#include <portals4_goportals.h>
*/
import "C"

import (
	"unsafe"

	"github.com/goportals/goportals/portals"
	"github.com/goportals/goportals/portals/ptl"
)

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
