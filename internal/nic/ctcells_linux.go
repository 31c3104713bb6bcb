package nic

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// mapCells maps n bytes of a new memfd, shared, and returns the memfd's inode.
func mapCells(n int) ([]byte, int, uint64, error) {
	fd, err := unix.MemfdCreate("goportals-ct", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, -1, 0, fmt.Errorf("memfd_create: %w", err)
	}
	if err := unix.Ftruncate(fd, int64(n)); err != nil {
		unix.Close(fd)
		return nil, -1, 0, fmt.Errorf("ftruncate: %w", err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, -1, 0, fmt.Errorf("fstat: %w", err)
	}
	mem, err := unix.Mmap(fd, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		unix.Close(fd)
		return nil, -1, 0, fmt.Errorf("mmap: %w", err)
	}
	return mem, fd, st.Ino, nil
}
