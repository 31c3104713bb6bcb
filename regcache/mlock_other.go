//go:build !linux

package regcache

import (
	"errors"
	"unsafe"
)

// Pin is the registration of MlockRegistrar.
type Pin struct {
	// Addr and Len give the range.
	Addr, Len uintptr
}

// MlockRegistrar pins with mlock(2) on Linux; elsewhere Register fails.
type MlockRegistrar struct{}

// errNoMlock reports that this build has no mlock registrar.
var errNoMlock = errors.New("regcache: mlock registrar needs Linux")

// Register fails: no mlock here.
func (MlockRegistrar) Register(mem []byte) (Pin, error) {
	_ = unsafe.SliceData(mem)
	return Pin{}, errNoMlock
}

// Deregister does nothing.
func (MlockRegistrar) Deregister(Pin) error { return nil }
