//go:build !linux

package nic

import (
	"unsafe"

	"github.com/goportals/goportals/eq"
)

// mapCells allocates the cells where there is no memfd: plain memory, never freed
// (slabs are pooled), shared with no one.
func mapCells(n int) ([]byte, int, uint64, error) {
	cells := make([]eq.Cell, n/eq.CellSize)
	return unsafe.Slice((*byte)(unsafe.Pointer(&cells[0])), n), -1, 0, nil
}
