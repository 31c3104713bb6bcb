package md

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// mapAnon maps size bytes (a multiple of the page size) of private anonymous memory.
func mapAnon(size int) ([]byte, error) {
	m, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, fmt.Errorf("%w: mmap: %w", ErrNoMemory, err)
	}
	return m, nil
}

// unmap unmaps a mapping returned by mapAnon.
func unmap(m []byte) error {
	if err := unix.Munmap(m); err != nil {
		return fmt.Errorf("munmap: %w", err)
	}
	return nil
}
