//go:build linux

package regcache

import (
	"errors"
	"unsafe"

	"github.com/goportals/goportals/internal/verbs"
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

// Register locks mem. A refusal for RLIMIT_MEMLOCK (ENOMEM past the limit, EPERM
// with a zero limit, EAGAIN) matches verbs.ErrMemlock, as the verbs providers'.
func (MlockRegistrar) Register(mem []byte) (Pin, error) {
	if err := unix.Mlock(mem); err != nil {
		return Pin{}, mlockError(err)
	}
	return Pin{Addr: uintptr(unsafe.Pointer(unsafe.SliceData(mem))), Len: uintptr(len(mem)), mem: mem}, nil
}

// Deregister unlocks the range. Pages unmapped meanwhile (an invalidated entry) are
// skipped: the rest is unlocked page by page.
func (MlockRegistrar) Deregister(p Pin) error {
	if p.mem == nil {
		return nil
	}
	err := unix.Munlock(p.mem)
	if err != unix.ENOMEM {
		return err
	}
	for off := 0; off < len(p.mem); off += int(pageSize) {
		_ = unix.Munlock(p.mem[off : off+int(pageSize)])
	}
	return nil
}

// mlockError classifies an mlock failure.
func mlockError(err error) error {
	if errors.Is(err, unix.ENOMEM) || errors.Is(err, unix.EPERM) || errors.Is(err, unix.EAGAIN) {
		return verbs.Errorf("mlock", verbs.ErrMemlock, err)
	}
	return err
}
