package nic

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/goportals/goportals/eq"
)

func u64(v uint64) []byte {
	b := make([]byte, 8)
	binary.LittleEndian.PutUint64(b, v)
	return b
}

// TestAtomicOps runs each operation on one element and compares with Go arithmetic.
func TestAtomicOps(t *testing.T) {
	nis := newNIs(t, 2, NIMatching|NIPhysical)
	init, tgt := nis[0], nis[1]
	tbuf, tq, _ := target(t, tgt, 64)
	iq := mustEQn(t, init, 256)
	src := make([]byte, 64)
	res := make([]byte, 64)
	sm := mustMD(t, init, MDSpec{Start: src, EQ: iq, Options: MDEventSendDisable})
	rm := mustMD(t, init, MDSpec{Start: res, EQ: iq})
	dst := mustPhysID(t, tgt)

	cases := []struct {
		op        AtomicOp
		dt        AtomicType
		old, oper uint64
		cond      uint64
		want      uint64
	}{
		{eq.OpSum, eq.Uint64, 40, 2, 0, 42},
		{eq.OpSum, eq.Int32, uint64(uint32(0xfffffffe)), 5, 0, 3}, // -2 + 5
		{eq.OpProd, eq.Uint16, 7, 6, 0, 42},
		{eq.OpMin, eq.Int64, 5, uint64(0xffffffffffffffff), 0, uint64(0xffffffffffffffff)},
		{eq.OpMax, eq.Uint8, 5, 200, 0, 200},
		{eq.OpBOr, eq.Uint32, 0xf0, 0x0f, 0, 0xff},
		{eq.OpBAnd, eq.Uint32, 0xf0, 0x3c, 0, 0x30},
		{eq.OpBXor, eq.Uint64, 0xff, 0x0f, 0, 0xf0},
		{eq.OpLOr, eq.Int8, 0, 3, 0, 1},
		{eq.OpLAnd, eq.Int8, 2, 0, 0, 0},
		{eq.OpLXor, eq.Int16, 1, 1, 0, 0},
		{eq.OpSum, eq.Double, math.Float64bits(1.5), math.Float64bits(2.25), 0, math.Float64bits(3.75)},
		{eq.OpSwap, eq.Uint64, 1, 99, 0, 99},
		{eq.OpCSwap, eq.Uint64, 7, 99, 7, 99},
		{eq.OpCSwap, eq.Uint64, 7, 99, 8, 7},
		{eq.OpCSwapNE, eq.Uint64, 7, 99, 8, 99},
		{eq.OpCSwapGT, eq.Int64, 7, 99, 8, 99}, // operand 8 > target 7
		{eq.OpCSwapLT, eq.Int64, 7, 99, 8, 7},
		{eq.OpMSwap, eq.Uint64, 0xffff, 0x1234, 0xff00, 0x12ff},
	}
	for i, c := range cases {
		size := uint64(c.dt.Size())
		copy(tbuf, u64(c.old))
		copy(src, u64(c.oper))
		clear(res)
		var err error
		if c.op >= eq.OpSwap {
			err = Swap(rm, 0, sm, 0, size, dst, 4, 0x42, 0, uint64(i), 0, u64(c.cond)[:size], c.op, c.dt)
		} else {
			err = FetchAtomic(rm, 0, sm, 0, size, dst, 4, 0x42, 0, uint64(i), 0, c.op, c.dt)
		}
		if err != nil {
			t.Fatalf("case %d (%v %v): %v", i, c.op, c.dt, err)
		}
		if ev := waitEvent(t, iq); ev.Type != eq.EventReply || ev.NIFail != eq.NIOK || ev.UserPtr != uint64(i) {
			t.Fatalf("case %d: %+v", i, ev)
		}
		if ev := waitEvent(t, tq); ev.Type != eq.EventFetchAtomic || ev.AtomicOp != c.op || ev.AtomicType != c.dt {
			t.Fatalf("case %d target event %+v", i, ev)
		}
		mask := uint64(1)<<(8*size) - 1
		if size == 8 {
			mask = ^uint64(0)
		}
		if got := binary.LittleEndian.Uint64(tbuf) & mask; got != c.want&mask {
			t.Errorf("%v %v: target %#x, want %#x", c.op, c.dt, got, c.want&mask)
		}
		if got := binary.LittleEndian.Uint64(res) & mask; got != c.old&mask {
			t.Errorf("%v %v: fetched %#x, want the old %#x", c.op, c.dt, got, c.old&mask)
		}
	}
}

func TestAtomicArgumentErrors(t *testing.T) {
	nis := newNIs(t, 1, NIMatching|NIPhysical)
	ni := nis[0]
	buf := make([]byte, 64)
	m := mustMD(t, ni, MDSpec{Start: buf})
	self := mustPhysID(t, ni)
	for _, c := range []struct {
		name string
		err  error
		code Errno
	}{
		{"bitwise on double", Atomic(m, 0, 8, NoAckReq, self, 0, 0, 0, 0, 0, eq.OpBOr, eq.Double), ArgInvalid},
		{"length not a multiple (the whole elements apply)", Atomic(m, 0, 6, NoAckReq, self, 0, 0, 0, 0, 0, eq.OpSum, eq.Uint32), OK},
		{"CSWAP of two elements", Swap(m, 0, m, 8, 16, self, 0, 0, 0, 0, 0, buf[:8], eq.OpCSwap, eq.Uint64), ArgInvalid},
		{"SUM through Swap", Swap(m, 0, m, 8, 8, self, 0, 0, 0, 0, 0, buf[:8], eq.OpSum, eq.Uint64), ArgInvalid},
		{"swap through Atomic", Atomic(m, 0, 8, NoAckReq, self, 0, 0, 0, 0, 0, eq.OpSwap, eq.Uint64), ArgInvalid},
		{"bitwise on long double", Atomic(m, 0, 16, NoAckReq, self, 0, 0, 0, 0, 0, eq.OpBOr, eq.LongDouble), ArgInvalid},
		{"64 bytes, within max_atomic_size", Atomic(m, 0, 64, NoAckReq, self, 0, 0, 0, 0, 0, eq.OpSum, eq.Uint8), OK},
		{"outside the MD", Put(m, 60, 8, NoAckReq, self, 0, 0, 0, 0, 0), ArgInvalid},
	} {
		if got := ErrnoOf(c.err); got != c.code {
			t.Errorf("%s: %v, want %v", c.name, c.err, c.code)
		}
	}
}
