//go:build linux

package regcache

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// Pin is the registration of MlockRegistrar: a locked range.
type Pin struct {
	// Addr and Len give the locked range.
	Addr, Len uintptr
	mem       []byte
}

// MlockRegistrar pins memory with mlock(2) and unpins it with munlock(2): the cost of a
// real pin without a NIC (the soft verbs provider does the same plus a translation
// snapshot). It obeys RLIMIT_MEMLOCK.
type MlockRegistrar struct{}

// Register locks mem.
func (MlockRegistrar) Register(mem []byte) (Pin, error) {
	if err := unix.Mlock(mem); err != nil {
		return Pin{}, err
	}
	return Pin{Addr: uintptr(unsafe.Pointer(unsafe.SliceData(mem))), Len: uintptr(len(mem)), mem: mem}, nil
}

// Deregister unlocks the range.
func (MlockRegistrar) Deregister(p Pin) error {
	if p.mem == nil {
		return nil
	}
	return unix.Munlock(p.mem)
}
