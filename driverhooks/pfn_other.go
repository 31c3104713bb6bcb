//go:build !linux

package driverhooks

import "fmt"

// ErrNoPFN reports that page frame numbers cannot be read here. It matches
// ErrNotSupported.
var ErrNoPFN = fmt.Errorf("no /proc/self/pagemap on this system: %w", ErrNotSupported)

// PFNOracle reads page frame numbers; it needs Linux.
type PFNOracle struct{}

// OpenPFNOracle reports ErrNoPFN.
func OpenPFNOracle() (*PFNOracle, error) { return nil, &OpError{Op: "pagemap", Err: ErrNoPFN} }

// Close does nothing.
func (o *PFNOracle) Close() error { return nil }

// Snapshot reports ErrNoPFN.
func (o *PFNOracle) Snapshot(addr, length uintptr) ([]uint64, error) {
	return nil, &OpError{Op: "pagemap", Err: ErrNoPFN}
}

// Verify reports ErrNoPFN.
func (o *PFNOracle) Verify(snapStart uintptr, snap []uint64, addr, length uintptr) (int, error) {
	return 0, &OpError{Op: "pagemap", Err: ErrNoPFN}
}
