//go:build linux && cgo && !noibverbs

package ibv

import (
	"encoding/binary"
	"reflect"
	"testing"

	"github.com/goportals/goportals/internal/verbs"
)

// TestBuildChain checks the translation of a batch into one ibv_send_wr chain: order
// and links, sequence numbers as wr_id with the caller's IDs in the side table,
// opcodes, flags, SGE lists, the immediate in network order and the RDMA and atomic
// fields in their union members.
func TestBuildChain(t *testing.T) {
	sg := func(addr uint64, n uint32, key uint32) verbs.SGE { return verbs.SGE{Addr: addr, Length: n, LKey: key} }
	wrs := []verbs.SendWR{
		{ID: 100, Opcode: verbs.OpSend, Flags: verbs.SendSignaled, SG: []verbs.SGE{sg(0x1000, 8, 1), sg(0x2000, 16, 2)}},
		{ID: 101, Opcode: verbs.OpSendWithImm, Imm: 0x01020304, SG: []verbs.SGE{sg(0x3000, 4, 3)}},
		{ID: 102, Opcode: verbs.OpRDMAWrite, Flags: verbs.SendFence | verbs.SendInline, SG: []verbs.SGE{sg(0x4000, 32, 0)},
			RemoteAddr: 0xdead0000, RKey: 0x77},
		{ID: 103, Opcode: verbs.OpRDMAWriteWithImm, Imm: 0xa0b0c0d0, SG: []verbs.SGE{sg(0x5000, 64, 5)}, RemoteAddr: 0xbeef0000, RKey: 0x78},
		{ID: 104, Opcode: verbs.OpRDMARead, Flags: verbs.SendSignaled | verbs.SendSolicited, SG: []verbs.SGE{sg(0x6000, 128, 6)},
			RemoteAddr: 0xcafe0000, RKey: 0x79},
		{ID: 105, Opcode: verbs.OpAtomicFetchAdd, SG: []verbs.SGE{sg(0x7000, 8, 7)}, RemoteAddr: 0xf00d0008, RKey: 0x7a, CompareAdd: 5},
		{ID: 106, Opcode: verbs.OpAtomicCmpSwap, SG: []verbs.SGE{sg(0x8000, 8, 8)}, RemoteAddr: 0xf00d0010, RKey: 0x7b,
			CompareAdd: 9, Swap: 0x1122334455667788},
		{ID: 107, Opcode: verbs.OpSend},
	}
	const seq, depth = 1000, 4 // wraps the side table
	be := func(v uint32) uint32 {
		var b [4]byte
		binary.BigEndian.PutUint32(b[:], v)
		return binary.NativeEndian.Uint32(b[:])
	}
	c := wrConst
	want := []builtWR{
		{Opcode: c["SEND"], Flags: c["SIGNALED"], SGE: wrs[0].SG},
		{Opcode: c["SEND_WITH_IMM"], ImmBE: be(0x01020304), SGE: wrs[1].SG},
		{Opcode: c["RDMA_WRITE"], Flags: c["FENCE"] | c["INLINE"], SGE: wrs[2].SG, RemoteAddr: 0xdead0000, RKey: 0x77},
		{Opcode: c["RDMA_WRITE_WITH_IMM"], ImmBE: be(0xa0b0c0d0), SGE: wrs[3].SG, RemoteAddr: 0xbeef0000, RKey: 0x78},
		{Opcode: c["RDMA_READ"], Flags: c["SIGNALED"] | c["SOLICITED"], SGE: wrs[4].SG, RemoteAddr: 0xcafe0000, RKey: 0x79},
		{Opcode: c["ATOMIC_FETCH_AND_ADD"], SGE: wrs[5].SG, RemoteAddr: 0xf00d0008, RKey: 0x7a, CompareAdd: 5},
		{Opcode: c["ATOMIC_CMP_AND_SWP"], SGE: wrs[6].SG, RemoteAddr: 0xf00d0010, RKey: 0x7b, CompareAdd: 9, Swap: 0x1122334455667788},
		{Opcode: c["SEND"]},
	}
	link := func(w []builtWR, seq uint64) []builtWR {
		out := append([]builtWR(nil), w...)
		for i := range out {
			out[i].WRID = seq + uint64(i)
			out[i].Next = i + 1
			if i == len(out)-1 {
				out[i].Next = -1
			}
		}
		return out
	}
	// The whole batch as one chain, sequence numbers from 0.
	if got, w := buildChain(wrs, len(wrs), 0), link(want, 0); !reflect.DeepEqual(got, w) {
		t.Fatalf("chain\n got %+v\nwant %+v", got, w)
	}
	// Sequence numbers that wrap a side table of depth slots.
	if got, w := buildChain(wrs[len(wrs)-depth:], depth, seq), link(want[len(want)-depth:], seq); !reflect.DeepEqual(got, w) {
		t.Fatalf("wrapped chain\n got %+v\nwant %+v", got, w)
	}
}
