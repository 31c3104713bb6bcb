package nic

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// mapCells maps n bytes of a new memfd, shared.
func mapCells(n int) ([]byte, int, error) {
	fd, err := unix.MemfdCreate("goportals-ct", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, -1, fmt.Errorf("memfd_create: %w", err)
	}
	if err := unix.Ftruncate(fd, int64(n)); err != nil {
		unix.Close(fd)
		return nil, -1, fmt.Errorf("ftruncate: %w", err)
	}
	mem, err := unix.Mmap(fd, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		unix.Close(fd)
		return nil, -1, fmt.Errorf("mmap: %w", err)
	}
	return mem, fd, nil
}
