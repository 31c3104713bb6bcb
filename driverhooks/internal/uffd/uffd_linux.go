//go:build linux

package uffd

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// Open calls userfaultfd(2) with flags and returns the descriptor.
func Open(flags int) (int, error) {
	fd, _, errno := unix.Syscall(unix.SYS_USERFAULTFD, uintptr(flags), 0, 0)
	if errno != 0 {
		return -1, errno
	}
	return int(fd), nil
}

// Handshake runs UFFDIO_API asking for features and returns the features the kernel
// granted.
func Handshake(fd int, features uint64) (uint64, error) {
	msg := APIMsg{API: API, Features: features}
	if err := ioctl(fd, IoctlAPI, unsafe.Pointer(&msg)); err != nil {
		return 0, err
	}
	return msg.Features, nil
}

// Register runs UFFDIO_REGISTER on [start, start+length) with mode.
func Register(fd int, start, length uintptr, mode uint64) error {
	msg := RegisterMsg{Range: Range{Start: uint64(start), Len: uint64(length)}, Mode: mode}
	return ioctl(fd, IoctlRegister, unsafe.Pointer(&msg))
}

// Unregister runs UFFDIO_UNREGISTER on [start, start+length).
func Unregister(fd int, start, length uintptr) error {
	r := Range{Start: uint64(start), Len: uint64(length)}
	return ioctl(fd, IoctlUnregister, unsafe.Pointer(&r))
}

func ioctl(fd int, req uintptr, arg unsafe.Pointer) error {
	for {
		_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), req, uintptr(arg))
		switch errno {
		case 0:
			return nil
		case unix.EINTR:
			continue
		default:
			return errno
		}
	}
}
