//go:build !cgo

package nic

import (
	"errors"
	"testing"

	"github.com/goportals/goportals/eq"
)

// TestRulesAtomicLongDoubleNoCgo: without cgo there is no C long double, so the
// LONG_DOUBLE atomics fail with an error matching ErrNotSupported (PTL_FAIL)
// instead of being rounded to double precision.
func TestRulesAtomicLongDoubleNoCgo(t *testing.T) {
	nis := newNIsWith(t, 2, NIMatching|NIPhysical, nil)
	init, tgt := nis[0], nis[1]
	m, err := init.MDBind(MDSpec{Start: make([]byte, 64)})
	if err != nil {
		t.Fatal(err)
	}
	r, err := init.MDBind(MDSpec{Start: make([]byte, 64)})
	if err != nil {
		t.Fatal(err)
	}
	dst := mustPhysID(t, tgt)
	for _, c := range []struct {
		name string
		err  error
	}{
		{"atomic", Atomic(m, 0, 16, NoAckReq, dst, 4, 0x42, 0, 0, 0, eq.OpSum, eq.LongDouble)},
		{"fetch atomic", FetchAtomic(r, 0, m, 0, 32, dst, 4, 0x42, 0, 0, 0, eq.OpProd, eq.LongDoubleComplex)},
		{"swap", Swap(r, 0, m, 0, 16, dst, 4, 0x42, 0, 0, 0, make([]byte, 16), eq.OpCSwap, eq.LongDouble)},
	} {
		var oe *OpError
		if !errors.Is(c.err, ErrNotSupported) || !errors.As(c.err, &oe) || oe.Errno != Fail {
			t.Errorf("long double %s without cgo: %v, want an *OpError PTL_FAIL matching ErrNotSupported", c.name, c.err)
		}
	}
}
