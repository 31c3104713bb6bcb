package main

/*
#cgo CFLAGS: -I${SRCDIR}/../include
#include <portals4.h>
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"unsafe"

	"github.com/goportals/goportals/internal/envknob"

	"github.com/goportals/goportals/portals"
	"github.com/goportals/goportals/ptlerr"
)

// noSlot is the slot the shim passes for PTL_EQ_NONE and PTL_CT_NONE.
const noSlot = ^uint32(0)

// maxSpan bounds a memory range turned into a slice: beyond it the range cannot
// be one (the address space has 47 bits here).
const maxSpan = 1 << 46

// maxIovecs bounds the I/O vector count read from C before the engine's limits
// apply.
const maxIovecs = 1 << 20

// debug prints every error returned to C on standard error (PTL_CAPI_DEBUG=1).
var debug = envknob.Get(envknob.CAPIDebug) == "1"

// saidUnsupported holds the calls that have reported a missing feature on
// standard error: each says so once.
var saidUnsupported sync.Map

// rc turns err into a Portals return code. A feature goportals does not
// provide (ErrNotSupported) is said on standard error, once per call name.
func rc(err error) C.int {
	if err == nil {
		return C.PTL_OK
	}
	// The usual answers of a poll (EQ_EMPTY, CT_NONE_REACHED) and every code but
	// PTL_FAIL, which a missing feature is, return here: the search of the error
	// chain below costs an allocation, too much for a call made in a loop.
	if oe, ok := err.(*ptlerr.OpError); ok && !debug && oe.Errno != portals.Fail {
		return C.int(oe.Errno)
	}
	if debug {
		fmt.Fprintln(os.Stderr, "libportals:", err)
	} else if errors.Is(err, portals.ErrNotSupported) {
		op := "libportals"
		var oe *ptlerr.OpError
		if errors.As(err, &oe) {
			op = oe.Op
		}
		if _, said := saidUnsupported.LoadOrStore(op, true); !said {
			fmt.Fprintln(os.Stderr, "libportals:", err)
		}
	}
	if oe, ok := err.(*ptlerr.OpError); ok { // the usual case, without errors.As
		return C.int(oe.Errno)
	}
	return C.int(portals.ErrnoOf(err))
}

// fail is the code of a call refused by this layer.
func fail(op string, code portals.Errno, format string, args ...any) C.int {
	return rc(ptlerr.New(op, code, fmt.Errorf(format, args...)))
}

// guard turns a panic inside a call into PTL_FAIL and a message: a C program
// never sees a Go panic.
func guard(op string, r *C.int) {
	if p := recover(); p != nil {
		fmt.Fprintf(os.Stderr, "libportals: %s: internal error: %v\n", op, p)
		*r = C.PTL_FAIL
	}
}

// badHandle is the code of a slot that holds no object of the expected kind.
func badHandle(op, what string) C.int {
	return fail(op, portals.ArgInvalid, "not a valid %s handle", what)
}

// unpackID turns a ptl_process_t (its 8 bytes as the shim passed them) into a
// ProcessID of a logical or physical NI.
func unpackID(v uint64, logical bool) portals.ProcessID {
	if logical {
		return portals.ProcessID{Rank: portals.Rank(uint32(v))}
	}
	return portals.ProcessID{NID: portals.NID(uint32(v)), PID: portals.PID(uint32(v >> 32))}
}

// packID is the inverse of unpackID.
func packID(id portals.ProcessID, logical bool) uint64 {
	if logical {
		return uint64(id.Rank)
	}
	return uint64(id.NID) | uint64(id.PID)<<32
}

func putID(dst *C.ptl_process_t, id portals.ProcessID, logical bool) {
	*(*uint64)(unsafe.Pointer(dst)) = packID(id, logical)
}

func getID(src *C.ptl_process_t, logical bool) portals.ProcessID {
	return unpackID(*(*uint64)(unsafe.Pointer(src)), logical)
}

// cmem is the memory of a ptl_md_t, ptl_le_t or ptl_me_t: a slice, I/O vectors,
// or a raw address range (Addr, Length) when no slice can name it (start NULL,
// or a length up to PTL_SIZE_MAX: "all of memory").
type cmem struct {
	b    []byte
	iov  [][]byte
	addr uintptr
	n    uint64
}

// memory turns the start/length pair of a ptl_md_t, ptl_le_t or ptl_me_t into
// its cmem.
func memory(op string, start unsafe.Pointer, length C.ptl_size_t, options C.uint) (cmem, error) {
	if options&C.PTL_IOVEC == 0 && length != 0 &&
		(start == nil || length > maxSpan || uintptr(start)+uintptr(length) < uintptr(start)) {
		return cmem{addr: uintptr(start), n: uint64(length)}, nil
	}
	b, iov, err := memorySlices(op, start, length, options)
	return cmem{b: b, iov: iov}, err
}

// memorySlices turns a range of C memory into a slice, or into I/O vectors when
// options has PTL_IOVEC.
func memorySlices(op string, start unsafe.Pointer, length C.ptl_size_t, options C.uint) ([]byte, [][]byte, error) {
	if options&C.PTL_IOVEC != 0 {
		if length > maxIovecs {
			return nil, nil, ptlerr.New(op, portals.ArgInvalid, fmt.Errorf("%d I/O vectors", uint64(length)))
		}
		if length == 0 {
			return nil, [][]byte{}, nil
		}
		if start == nil {
			return nil, nil, ptlerr.New(op, portals.ArgInvalid, fmt.Errorf("NULL I/O vector array"))
		}
		iov := unsafe.Slice((*C.ptl_iovec_t)(start), int(length))
		out := make([][]byte, len(iov))
		for i := range iov {
			b, err := slice(op, iov[i].iov_base, iov[i].iov_len)
			if err != nil {
				return nil, nil, err
			}
			out[i] = b
		}
		return nil, out, nil
	}
	b, err := slice(op, start, length)
	return b, nil, err
}

// slice is the byte slice over [start, start+length) of C memory.
func slice(op string, start unsafe.Pointer, length C.ptl_size_t) ([]byte, error) {
	if length == 0 {
		return nil, nil
	}
	if start == nil || length > maxSpan || uintptr(start)+uintptr(length) < uintptr(start) {
		return nil, ptlerr.New(op, portals.ArgInvalid, fmt.Errorf("I/O vector at %p of %d bytes", start, uint64(length)))
	}
	return unsafe.Slice((*byte)(start), int(length)), nil
}

// fillEvent writes ev into the C event dst.
func fillEvent(dst *C.ptl_event_t, ev *portals.Event, logical bool) {
	*(*uintptr)(unsafe.Pointer(&dst.start)) = ev.Addr
	*(*uint64)(unsafe.Pointer(&dst.user_ptr)) = ev.UserPtr
	dst.hdr_data = C.ptl_hdr_data_t(ev.HdrData)
	dst.match_bits = C.ptl_match_bits_t(ev.MatchBits)
	dst.rlength = C.ptl_size_t(ev.RLength)
	dst.mlength = C.ptl_size_t(ev.MLength)
	dst.remote_offset = C.ptl_size_t(ev.RemoteOffset)
	putID(&dst.initiator, ev.Initiator, logical)
	dst.uid = C.ptl_uid_t(ev.UID)
	dst.pt_index = C.ptl_pt_index_t(ev.PTIndex)
	dst._type = C.ptl_event_kind_t(ev.Type)
	dst.ptl_list = C.ptl_list_t(ev.List)
	dst.ni_fail_type = C.ptl_ni_fail_t(ev.NIFail)
	dst.atomic_operation = C.ptl_op_t(ev.AtomicOp)
	dst.atomic_type = C.ptl_datatype_t(ev.AtomicType)
}

func fillCT(dst *C.ptl_ct_event_t, v portals.CTEvent) {
	if dst != nil {
		dst.success = C.ptl_size_t(v.Success)
		dst.failure = C.ptl_size_t(v.Failure)
	}
}

func fromLimits(l *C.ptl_ni_limits_t) *portals.Limits {
	if l == nil {
		return nil
	}
	return &portals.Limits{
		MaxEntries: int(l.max_entries), MaxUnexpectedHeaders: int(l.max_unexpected_headers),
		MaxMDs: int(l.max_mds), MaxEQs: int(l.max_eqs), MaxCTs: int(l.max_cts), MaxPTIndex: int(l.max_pt_index),
		MaxIovecs: int(l.max_iovecs), MaxListSize: int(l.max_list_size), MaxTriggeredOps: int(l.max_triggered_ops),
		MaxMsgSize: uint64(l.max_msg_size), MaxAtomicSize: uint64(l.max_atomic_size),
		MaxFetchAtomicSize: uint64(l.max_fetch_atomic_size), MaxWAWOrderedSize: uint64(l.max_waw_ordered_size),
		MaxWAROrderedSize: uint64(l.max_war_ordered_size), MaxVolatileSize: uint64(l.max_volatile_size),
		Features: uint32(l.features),
	}
}

// cint saturates v into a C int.
func cint(v int) C.int {
	const maxInt = int(^uint32(0) >> 1)
	if v > maxInt {
		return C.int(maxInt)
	}
	return C.int(v)
}

func toLimits(dst *C.ptl_ni_limits_t, l portals.Limits) {
	if dst == nil {
		return
	}
	dst.max_entries = cint(l.MaxEntries)
	dst.max_unexpected_headers = cint(l.MaxUnexpectedHeaders)
	dst.max_mds = cint(l.MaxMDs)
	dst.max_cts = cint(l.MaxCTs)
	dst.max_eqs = cint(l.MaxEQs)
	dst.max_pt_index = cint(l.MaxPTIndex)
	dst.max_iovecs = cint(l.MaxIovecs)
	dst.max_list_size = cint(l.MaxListSize)
	dst.max_triggered_ops = cint(l.MaxTriggeredOps)
	dst.max_msg_size = C.ptl_size_t(l.MaxMsgSize)
	dst.max_atomic_size = C.ptl_size_t(wholeElements(l.MaxAtomicSize))
	dst.max_fetch_atomic_size = C.ptl_size_t(wholeElements(l.MaxFetchAtomicSize))
	dst.max_waw_ordered_size = C.ptl_size_t(l.MaxWAWOrderedSize)
	dst.max_war_ordered_size = C.ptl_size_t(l.MaxWAROrderedSize)
	dst.max_volatile_size = C.ptl_size_t(l.MaxVolatileSize)
	dst.features = C.uint(l.Features)
}

// largestElement is the size of the largest atomic datatype,
// PTL_LONG_DOUBLE_COMPLEX.
const largestElement = 32

// wholeElements cuts an atomic size limit down to a multiple of every datatype's
// size. Clients cut a long atomic into pieces of the limit's size (Sandia
// OpenSHMEM's reductions do): with the engine's limit (its largest inline
// payload, 932 bytes) a piece would end inside an element and the next one start
// misaligned, corrupting the result. A limit below 32 bytes (a small one the
// program asked for) stays as granted.
func wholeElements(n uint64) uint64 {
	if n < largestElement {
		return n
	}
	return n - n%largestElement
}
