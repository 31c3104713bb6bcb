//go:build !linux

package soft

import (
	"errors"
	"time"
)

// supported reports whether this platform has what the provider needs.
const supported = false

var errNoPlatform = errors.New("soft provider needs Linux (memfd, futex, process_vm_readv)")

type shm struct {
	fd  int
	mem []byte
}

func newShm(string, int) (*shm, error)         { return nil, errNoPlatform }
func openPeerShm(int, int, int) (*shm, error)  { return nil, errNoPlatform }
func (s *shm) close()                          {}
func futexWait(*uint32, uint32, time.Duration) {}
func futexWake(*uint32)                        {}

type pidfd int

func openPidfd(int) (pidfd, error)          { return -1, errNoPlatform }
func (p pidfd) exited() bool                { return false }
func (p pidfd) close()                      {}
func cma(int, [][]byte, uint64, bool) error { return errNoPlatform }
func mlockRange(uintptr, uintptr) error     { return errNoPlatform }
func munlockRange(uintptr, uintptr) error   { return errNoPlatform }
func translate(uintptr, int) []uint64       { return nil }
func bootID() [16]byte                      { return [16]byte{} }
func errNoPlatformErr() error               { return errNoPlatform }

// uringPinner exists on Linux only.
type uringPinner struct{}

var uringSlotMax uint64 = 1 << 30

func newUringPinner(int) (*uringPinner, error)              { return nil, errNoPlatform }
func (*uringPinner) pin(uintptr, uintptr) ([]uint32, error) { return nil, errNoPlatform }
func (*uringPinner) unpin([]uint32)                         {}
func (*uringPinner) close()                                 {}
