//go:build cgo && amd64

package nic

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/goportals/goportals/eq"
)

// x87 encodes (-1)^neg * mant * 2^(exp-16383-63) in the x86-64 long double layout:
// 64-bit mantissa with explicit integer bit, sign and 15-bit exponent, 6 bytes of
// zero padding.
func x87(neg bool, exp uint16, mant uint64) []byte {
	b := make([]byte, 16)
	binary.LittleEndian.PutUint64(b, mant)
	if neg {
		exp |= 0x8000
	}
	binary.LittleEndian.PutUint16(b[8:], exp)
	return b
}

// TestRulesAtomicLongDoubleNative: LONG_DOUBLE and LONG_DOUBLE_COMPLEX atomics are
// computed in the platform's long double (64 bits of mantissa on x86-64), not
// rounded to a double's 53: 1 + 2^-60 stays distinct from 1.
func TestRulesAtomicLongDoubleNative(t *testing.T) {
	one := x87(false, 0x3fff, 1<<63)
	two := x87(false, 0x4000, 1<<63)
	tiny := x87(false, 0x3fff-60, 1<<63)          // 2^-60
	onePlus := x87(false, 0x3fff, 1<<63|1<<3)     // 1 + 2^-60
	twoPlus := x87(false, 0x4000, 1<<63|1<<2)     // 2 + 2^-60
	minusOnePlus := x87(true, 0x3fff, 1<<63|1<<3) // -(1 + 2^-60)
	five := x87(false, 0x4001, 0xa<<60)           // 5
	cat := func(a, b []byte) []byte { return append(append([]byte(nil), a...), b...) }
	cases := []struct {
		name         string
		op           AtomicOp
		dt           AtomicType
		old, oper    []byte
		cond, want   []byte
		fetchingOnly bool
	}{
		{"sum", eq.OpSum, eq.LongDouble, one, tiny, nil, onePlus, false},
		{"min", eq.OpMin, eq.LongDouble, onePlus, one, nil, one, false},
		{"max", eq.OpMax, eq.LongDouble, one, onePlus, nil, onePlus, false},
		{"prod by -1", eq.OpProd, eq.LongDouble, onePlus, x87(true, 0x3fff, 1<<63), nil, minusOnePlus, false},
		{"cswap unequal beyond 53 bits", eq.OpCSwap, eq.LongDouble, one, five, onePlus, one, true},
		{"cswap equal", eq.OpCSwap, eq.LongDouble, onePlus, five, onePlus, five, true},
		{"cswap_ne", eq.OpCSwapNE, eq.LongDouble, one, five, onePlus, five, true},
		{"cswap_gt", eq.OpCSwapGT, eq.LongDouble, one, five, onePlus, five, true},
		{"cswap_lt", eq.OpCSwapLT, eq.LongDouble, one, five, onePlus, one, true},
		{"swap", eq.OpSwap, eq.LongDouble, one, onePlus, nil, onePlus, true},
		{"complex sum", eq.OpSum, eq.LongDoubleComplex, cat(one, two), cat(tiny, tiny), nil, cat(onePlus, twoPlus), false},
		{"complex prod by 1", eq.OpProd, eq.LongDoubleComplex, cat(onePlus, twoPlus), cat(one, x87(false, 0, 0)), nil, cat(onePlus, twoPlus), false},
		{"complex cswap unequal", eq.OpCSwap, eq.LongDoubleComplex, cat(one, two), cat(five, five), cat(onePlus, two), cat(one, two), true},
		{"complex cswap_ne", eq.OpCSwapNE, eq.LongDoubleComplex, cat(one, two), cat(five, five), cat(onePlus, two), cat(five, five), true},
	}
	nis := newNIsWith(t, 2, NIMatching|NIPhysical, nil)
	init, tgt := nis[0], nis[1]
	tbuf := make([]byte, 64)
	tq, _ := ruleTarget(t, tgt, tbuf, nil)
	iq, err := init.EQAlloc(64)
	if err != nil {
		t.Fatal(err)
	}
	src := make([]byte, 64)
	sm, err := init.MDBind(MDSpec{Start: src, EQ: iq, Options: MDEventSendDisable})
	if err != nil {
		t.Fatal(err)
	}
	res := make([]byte, 64)
	rm, err := init.MDBind(MDSpec{Start: res, EQ: iq})
	if err != nil {
		t.Fatal(err)
	}
	dst := mustPhysID(t, tgt)
	for i, c := range cases {
		size := uint64(c.dt.Size())
		copy(tbuf, c.old)
		copy(src, c.oper)
		clear(res)
		if c.op >= eq.OpSwap {
			err = Swap(rm, 0, sm, 0, size, dst, 4, 0x42, 0, uint64(i), 0, c.cond, c.op, c.dt)
		} else {
			err = FetchAtomic(rm, 0, sm, 0, size, dst, 4, 0x42, 0, uint64(i), 0, c.op, c.dt)
		}
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if ev := waitKind(t, iq, eq.EventReply); ev.NIFail != eq.NIOK || ev.MLength != size {
			t.Fatalf("%s: reply %+v", c.name, ev)
		}
		waitKind(t, tq, eq.EventFetchAtomic)
		if !bytes.Equal(tbuf[:size], c.want) {
			t.Errorf("%s: target % x, want % x", c.name, tbuf[:size], c.want)
		}
		if !bytes.Equal(res[:size], c.old) {
			t.Errorf("%s: fetched % x, want the old % x", c.name, res[:size], c.old)
		}
		if c.fetchingOnly {
			continue
		}
		// The same through a non-fetching atomic.
		copy(tbuf, c.old)
		if err := Atomic(sm, 0, size, AckReqFull, dst, 4, 0x42, 0, uint64(i), 0, c.op, c.dt); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if ev := waitKind(t, iq, eq.EventAck); ev.NIFail != eq.NIOK || ev.MLength != size {
			t.Fatalf("%s: ack %+v", c.name, ev)
		}
		waitKind(t, tq, eq.EventAtomic)
		if !bytes.Equal(tbuf[:size], c.want) {
			t.Errorf("%s (PtlAtomic): target % x, want % x", c.name, tbuf[:size], c.want)
		}
	}
}
