package md

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// mapShared maps size bytes (a multiple of the page size) of a new memfd, shared, and
// returns the mapping with the memfd and its inode. The memfd stays open until Free:
// other processes of the node reach the same pages through /proc/<pid>/fd/<fd> (the
// engine's direct access, see the nic package), which needs the same ptrace access as
// process_vm_writev.
func mapShared(size int) (m []byte, fd int, ino uint64, err error) {
	fd, err = unix.MemfdCreate("goportals-alloc", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, -1, 0, fmt.Errorf("%w: memfd_create: %w", ErrNoMemory, err)
	}
	if err = unix.Ftruncate(fd, int64(size)); err != nil {
		unix.Close(fd)
		return nil, -1, 0, fmt.Errorf("%w: ftruncate: %w", ErrNoMemory, err)
	}
	var st unix.Stat_t
	if err = unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, -1, 0, fmt.Errorf("%w: fstat: %w", ErrNoMemory, err)
	}
	m, err = unix.Mmap(fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		unix.Close(fd)
		return nil, -1, 0, fmt.Errorf("%w: mmap: %w", ErrNoMemory, err)
	}
	return m, fd, st.Ino, nil
}

// unmap unmaps a mapping returned by mapShared and closes its memfd.
func unmap(m []byte, fd int) error {
	if err := unix.Munmap(m); err != nil {
		return fmt.Errorf("munmap: %w", err)
	}
	if fd >= 0 {
		unix.Close(fd)
	}
	return nil
}
