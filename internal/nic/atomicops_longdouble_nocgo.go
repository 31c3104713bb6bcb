//go:build !cgo

package nic

import "fmt"

// errLongDouble: without cgo there is no C long double to compute LONG_DOUBLE and
// LONG_DOUBLE_COMPLEX atomics in, and double precision would silently round them.
var errLongDouble = fmt.Errorf("PTL_LONG_DOUBLE atomics are computed in C long double, and this build has no cgo: %w",
	ErrNotSupported)

// longDoubleSupport reports why LONG_DOUBLE atomics cannot be computed.
func longDoubleSupport() error { return errLongDouble }

// applyLongDouble is never reached: checkAtomic refuses the long double types.
func applyLongDouble(op AtomicOp, dt AtomicType, dst, src, cond []byte) {}
