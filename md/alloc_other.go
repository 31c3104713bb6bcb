//go:build !linux

package md

// mapAnon is not available off Linux: Alloc reports ErrNotSupported.
func mapAnon(size int) ([]byte, error) { return nil, ErrNotSupported }

// unmap is never reached off Linux (mapAnon never succeeds).
func unmap(m []byte) error { return ErrNotSupported }
