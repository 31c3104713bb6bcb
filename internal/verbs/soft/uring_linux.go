//go:build linux

package soft

import (
	"fmt"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// uringPinner holds page pins the way an HCA does: an io_uring instance, never used
// for I/O, whose registered-buffer table is the pin holder. Installing an iovec in
// a slot of the table makes the kernel take a long-term reference on every page
// (pin_user_pages with FOLL_LONGTERM, after faulting them in for writing) and charge
// them to RLIMIT_MEMLOCK unless the ring's creator had CAP_IPC_LOCK; emptying the
// slot drops the references and the charge. Unlike mlock the pages stay ordinary:
// madvise(MADV_DONTNEED) on them succeeds, the next touch maps new frames, and the
// old frames stay allocated until the slot is emptied.
type uringPinner struct {
	fd      int
	slotMax uintptr // the largest range one slot holds (page aligned)

	mu   sync.Mutex
	free []uint32 // empty slots, a stack
}

// uringSlotMax is the largest iovec installed in one slot (the kernel's bound) by
// the pinners created afterwards; larger ranges take several slots. Tests lower it
// to exercise the splitting.
var uringSlotMax uint64 = ioringMaxBufSize

// newUringPinner creates the ring and registers an empty table of slots entries.
func newUringPinner(slots int) (*uringPinner, error) {
	var p ioUringParams
	fd, _, e := unix.Syscall(unix.SYS_IO_URING_SETUP, 1, uintptr(unsafe.Pointer(&p)), 0)
	if e != 0 {
		return nil, fmt.Errorf("io_uring_setup: %w", e)
	}
	reg := ioUringRsrcRegister{nr: uint32(slots), flags: ioringRsrcRegisterSparse}
	_, _, e = unix.Syscall6(unix.SYS_IO_URING_REGISTER, fd, ioringRegisterBuffers2,
		uintptr(unsafe.Pointer(&reg)), unsafe.Sizeof(reg), 0, 0)
	if e != 0 {
		unix.Close(int(fd))
		return nil, fmt.Errorf("io_uring_register(BUFFERS2, sparse %d): %w", slots, e)
	}
	u := &uringPinner{fd: int(fd), slotMax: max(uintptr(uringSlotMax)&^(pageSize-1), pageSize),
		free: make([]uint32, 0, slots)}
	for i := slots - 1; i >= 0; i-- {
		u.free = append(u.free, uint32(i))
	}
	return u, nil
}

// set installs [addr, addr+n) in slot, or empties the slot when n is 0.
func (u *uringPinner) set(slot uint32, addr, n uintptr) error {
	// The address stays an integer: it may point into the Go heap, where a
	// pointer made from an integer would upset checkptr, and the caller keeps
	// the memory alive.
	iov := iovec{base: uint64(addr), len: uint64(n)}
	up := ioUringRsrcUpdate2{offset: slot, data: uint64(uintptr(unsafe.Pointer(&iov))), nr: 1}
	for {
		r, _, e := unix.Syscall6(unix.SYS_IO_URING_REGISTER, uintptr(u.fd), ioringRegisterBuffersUpdate,
			uintptr(unsafe.Pointer(&up)), unsafe.Sizeof(up), 0, 0)
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			return e
		}
		if r != 1 {
			return unix.EIO
		}
		return nil
	}
}

// pin pins [start, end) (page aligned) in as many slots as it takes and returns
// them. On error nothing stays pinned; the error is the kernel's: ENOMEM past
// RLIMIT_MEMLOCK, EFAULT for memory that cannot be pinned for writing (read-only,
// or a shared file mapping), ENOSPC when the table is full.
func (u *uringPinner) pin(start, end uintptr) ([]uint32, error) {
	step := u.slotMax
	need := int((end - start + step - 1) / step)
	u.mu.Lock()
	if len(u.free) < need {
		u.mu.Unlock()
		return nil, unix.ENOSPC
	}
	slots := make([]uint32, need)
	copy(slots, u.free[len(u.free)-need:])
	u.free = u.free[:len(u.free)-need]
	u.mu.Unlock()
	for i, s := range slots {
		a := start + uintptr(i)*step
		n := min(step, end-a)
		if err := u.set(s, a, n); err != nil {
			u.unpin(slots[:i])
			u.release(slots[i:])
			return nil, err
		}
	}
	return slots, nil
}

// unpin empties the slots and returns them to the table.
func (u *uringPinner) unpin(slots []uint32) {
	for i, s := range slots {
		// Emptying a valid slot cannot fail short of a kernel bug; a slot that did
		// not empty is not reused.
		if err := u.set(s, 0, 0); err != nil {
			u.release(slots[:i])
			return
		}
	}
	u.release(slots)
}

func (u *uringPinner) release(slots []uint32) {
	u.mu.Lock()
	u.free = append(u.free, slots...)
	u.mu.Unlock()
}

// close closes the ring; the kernel drops whatever pins remain.
func (u *uringPinner) close() {
	if u != nil && u.fd >= 0 {
		unix.Close(u.fd)
		u.fd = -1
	}
}
