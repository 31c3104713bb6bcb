//go:build linux

package soft

import "unsafe"

// Kernel ABI of io_uring used to hold page pins, from include/uapi/linux/io_uring.h
// (x/sys/unix has the system call numbers only). The ring is never used for I/O:
// only io_uring_setup and io_uring_register are called, so the submission and
// completion ring layouts are not needed.

// io_uring_register opcodes (enum io_uring_register_op).
const (
	ioringRegisterBuffers2      = 15 // IORING_REGISTER_BUFFERS2: struct io_uring_rsrc_register
	ioringRegisterBuffersUpdate = 16 // IORING_REGISTER_BUFFERS_UPDATE: struct io_uring_rsrc_update2
)

// ioringRsrcRegisterSparse (IORING_RSRC_REGISTER_SPARSE) registers a table of empty
// slots, filled later by IORING_REGISTER_BUFFERS_UPDATE.
const ioringRsrcRegisterSparse = 1 << 0

// ioringMaxRegBuffers is the kernel's bound on the registered-buffer table
// (IORING_MAX_REG_BUFFERS in io_uring/rsrc.h), and ioringMaxBufSize its bound on one
// buffer (SZ_1G, checked by io_buffer_validate).
const (
	ioringMaxRegBuffers = 1 << 14
	ioringMaxBufSize    = 1 << 30
)

// ioUringParams is struct io_uring_params (120 bytes): io_sqring_offsets and
// io_cqring_offsets are ten 32-bit words each (the last two of each pair form a u64).
type ioUringParams struct {
	sqEntries    uint32
	cqEntries    uint32
	flags        uint32
	sqThreadCPU  uint32
	sqThreadIdle uint32
	features     uint32
	wqFd         uint32
	resv         [3]uint32
	sqOff        [10]uint32
	cqOff        [10]uint32
}

// ioUringRsrcRegister is struct io_uring_rsrc_register (32 bytes).
type ioUringRsrcRegister struct {
	nr    uint32
	flags uint32
	resv2 uint64
	data  uint64 // user pointer to iovecs (0 with the sparse flag)
	tags  uint64 // user pointer to u64 tags (0: none)
}

// ioUringRsrcUpdate2 is struct io_uring_rsrc_update2 (32 bytes).
type ioUringRsrcUpdate2 struct {
	offset uint32 // first slot
	resv   uint32
	data   uint64 // user pointer to nr iovecs; a zero iovec empties its slot
	tags   uint64
	nr     uint32
	resv2  uint32
}

// iovec is struct iovec (include/uapi/linux/uio.h) with the base as an integer.
type iovec struct {
	base uint64
	len  uint64
}

// The sizes the kernel expects (it checks the register arguments' sizes).
var (
	_ [120]byte = [unsafe.Sizeof(ioUringParams{})]byte{}
	_ [32]byte  = [unsafe.Sizeof(ioUringRsrcRegister{})]byte{}
	_ [32]byte  = [unsafe.Sizeof(ioUringRsrcUpdate2{})]byte{}
	_ [16]byte  = [unsafe.Sizeof(iovec{})]byte{}
)
