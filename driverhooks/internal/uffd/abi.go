package uffd

// Flags of the userfaultfd(2) system call.
const (
	// UserModeOnly (UFFD_USER_MODE_ONLY) restricts the descriptor to faults from user
	// mode; it is what an unprivileged process may open when
	// vm.unprivileged_userfaultfd is 0.
	UserModeOnly = 1
)

// API is the UFFD_API version negotiated with UFFDIO_API.
const API = 0xAA

// Features requested with UFFDIO_API (UFFD_FEATURE_*).
const (
	FeaturePagefaultFlagWP = 1 << 0
	FeatureEventFork       = 1 << 1
	FeatureEventRemap      = 1 << 2
	FeatureEventRemove     = 1 << 3
	FeatureEventUnmap      = 1 << 6
)

// Registration modes of UFFDIO_REGISTER (UFFDIO_REGISTER_MODE_*).
const (
	RegisterModeMissing = 1 << 0
	RegisterModeWP      = 1 << 1
	RegisterModeMinor   = 1 << 2
)

// Event codes in uffd_msg.event (UFFD_EVENT_*).
const (
	EventPagefault = 0x12
	EventFork      = 0x13
	EventRemap     = 0x14
	EventRemove    = 0x15
	EventUnmap     = 0x16
)

// Layout of struct uffd_msg (packed): a one-byte event code and seven reserved bytes,
// then a 24-byte union. For REMOVE and UNMAP the union is {start, end}; for REMAP it is
// {from, to, len}; for PAGEFAULT it is {flags, address, ptid}.
const (
	MsgSize      = 32
	MsgEventOff  = 0
	MsgArgOff    = 8
	MsgArgWords  = 3
	rangeSize    = 16 // struct uffdio_range {start, len}
	apiSize      = 24 // struct uffdio_api {api, features, ioctls}
	registerSize = 32 // struct uffdio_register {range, mode, ioctls}
	wpSize       = 24 // struct uffdio_writeprotect {range, mode}
)

// ioc builds an ioctl request number like the kernel's _IOC(dir, type, nr, size).
func ioc(dir, typ, nr, size uintptr) uintptr {
	return dir<<30 | size<<16 | typ<<8 | nr
}

const (
	iocWrite = 1
	iocRead  = 2
	ioctlTyp = 0xAA
)

// Ioctl request numbers (UFFDIO_*).
var (
	IoctlAPI          = ioc(iocRead|iocWrite, ioctlTyp, 0x3F, apiSize)
	IoctlRegister     = ioc(iocRead|iocWrite, ioctlTyp, 0x00, registerSize)
	IoctlUnregister   = ioc(iocRead, ioctlTyp, 0x01, rangeSize)
	IoctlWake         = ioc(iocRead, ioctlTyp, 0x02, rangeSize)
	IoctlWriteProtect = ioc(iocRead|iocWrite, ioctlTyp, 0x06, wpSize)
)

// Range is struct uffdio_range.
type Range struct {
	Start, Len uint64
}

// APIMsg is struct uffdio_api.
type APIMsg struct {
	API, Features, Ioctls uint64
}

// RegisterMsg is struct uffdio_register.
type RegisterMsg struct {
	Range  Range
	Mode   uint64
	Ioctls uint64
}

// WriteProtectMsg is struct uffdio_writeprotect.
type WriteProtectMsg struct {
	Range Range
	Mode  uint64
}
