//go:build linux && cgo && !noibverbs

package ibv

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"unsafe"

	"github.com/goportals/goportals/internal/verbs"
)

// builtWR is one ibv_send_wr as ptl_build_send made it, read back into Go for the
// translation tests (which need no device).
type builtWR struct {
	WRID       uint64
	Next       int // index of the next request in the chain, -1 at the end
	SGE        []verbs.SGE
	Opcode     uint32
	Flags      uint32
	ImmBE      uint32 // imm_data as the wire carries it (network order)
	RemoteAddr uint64
	RKey       uint32
	CompareAdd uint64
	Swap       uint64
}

// buildChain runs the flattening and the C chain builder of PostSend on wr without a
// queue pair and returns the chain it would post.
func buildChain(wr []verbs.SendWR, depth int, seq uint64) []builtWR {
	q := &qp{sendIDs: make([]uint64, depth), sendOps: make([]verbs.Opcode, depth), sendLens: make([]uint32, depth)}
	q.flattenSend(wr, seq)
	n := len(q.swr)
	out := (*C.struct_ibv_send_wr)(C.calloc(C.size_t(n), C.size_t(unsafe.Sizeof(C.struct_ibv_send_wr{}))))
	defer C.free(unsafe.Pointer(out))
	C.ptl_build_send(&q.swr[0], C.int(n), q.sgePtr(), out)
	chain := unsafe.Slice(out, n)
	res := make([]builtWR, n)
	for i := range chain {
		w := &chain[i]
		b := builtWR{WRID: uint64(w.wr_id), Next: -1, Opcode: uint32(w.opcode), Flags: uint32(w.send_flags)}
		if w.next != nil {
			b.Next = int((uintptr(unsafe.Pointer(w.next)) - uintptr(unsafe.Pointer(out))) / unsafe.Sizeof(*w))
		}
		for _, g := range unsafe.Slice(w.sg_list, int(w.num_sge)) {
			b.SGE = append(b.SGE, verbs.SGE{Addr: uint64(g.addr), Length: uint32(g.length), LKey: uint32(g.lkey)})
		}
		b.ImmBE = *(*uint32)(unsafe.Pointer(&w.anon0[0]))
		switch w.opcode {
		case C.IBV_WR_ATOMIC_FETCH_AND_ADD, C.IBV_WR_ATOMIC_CMP_AND_SWP:
			at := (*struct {
				remoteAddr, compareAdd, swap uint64
				rkey                         uint32
			})(unsafe.Pointer(&w.wr[0]))
			b.RemoteAddr, b.CompareAdd, b.Swap, b.RKey = at.remoteAddr, at.compareAdd, at.swap, at.rkey
		default:
			rd := (*struct {
				remoteAddr uint64
				rkey       uint32
			})(unsafe.Pointer(&w.wr[0]))
			b.RemoteAddr, b.RKey = rd.remoteAddr, rd.rkey
		}
		res[i] = b
	}
	// The side tables hold the caller's IDs under the sequence numbers.
	for i := range wr {
		if q.sendIDs[(seq+uint64(i))%uint64(depth)] != wr[i].ID {
			res[i].WRID = ^uint64(0) // make the test see the mismatch
		}
	}
	return res
}

// wrConst exposes the ibv_wr_opcode and ibv_send_flags values to the tests.
var wrConst = map[string]uint32{
	"SEND": C.IBV_WR_SEND, "SEND_WITH_IMM": C.IBV_WR_SEND_WITH_IMM, "RDMA_WRITE": C.IBV_WR_RDMA_WRITE,
	"RDMA_WRITE_WITH_IMM": C.IBV_WR_RDMA_WRITE_WITH_IMM, "RDMA_READ": C.IBV_WR_RDMA_READ,
	"ATOMIC_FETCH_AND_ADD": C.IBV_WR_ATOMIC_FETCH_AND_ADD, "ATOMIC_CMP_AND_SWP": C.IBV_WR_ATOMIC_CMP_AND_SWP,
	"SIGNALED": C.IBV_SEND_SIGNALED, "FENCE": C.IBV_SEND_FENCE, "INLINE": C.IBV_SEND_INLINE, "SOLICITED": C.IBV_SEND_SOLICITED,
}
