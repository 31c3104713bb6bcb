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
