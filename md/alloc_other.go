//go:build !linux

package md

// mapShared is not available off Linux: Alloc reports ErrNotSupported.
func mapShared(size int) ([]byte, int, uint64, error) { return nil, -1, 0, ErrNotSupported }

// unmap is never reached off Linux (mapShared never succeeds).
func unmap(m []byte, fd int) error { return ErrNotSupported }
