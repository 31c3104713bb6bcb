//go:build !linux || !cgo

package driverhooks

// Seccomp is the seccomp user-notification backend; it needs Linux and cgo (its
// supervisor is a C thread), so here OpenSeccomp always fails.
type Seccomp struct{}

// OpenSeccomp reports ErrNoCgo (which matches ErrNotSupported).
func OpenSeccomp() (*Seccomp, error) { return nil, &OpError{Op: "open seccomp", Err: ErrNoCgo} }

// Kind reports KindSeccomp.
func (s *Seccomp) Kind() Kind { return KindSeccomp }

// Window reports false.
func (s *Seccomp) Window() bool { return false }

// Watch reports ErrNoCgo.
func (s *Seccomp) Watch(addr, length uintptr) error {
	return &OpError{Op: "watch", Addr: addr, Len: length, Err: ErrNoCgo}
}

// Unwatch does nothing.
func (s *Seccomp) Unwatch(addr, length uintptr) error { return nil }

// Close does nothing.
func (s *Seccomp) Close() error { return nil }

// SeccompStats are counters of the supervisor (always zero here).
type SeccompStats struct {
	Seq, Published, Notifications                       uint64
	Munmap, Mremap, Madvise, MmapFixed, Brk, Shm, Other uint64
	Flushes, StaleIDs, Foreign, Errors                  uint64
	LastErrno                                           int
	SyncWakeUp                                          bool
	SyncErrno                                           int
	Watched                                             int
}

// Stats returns zero counters.
func (s *Seccomp) Stats() SeccompStats { return SeccompStats{} }

func (s *Seccomp) seq() uint64                         { return 0 }
func (s *Seccomp) attach() (seq, head uint64, ok bool) { return 0, 0, false }
func (s *Seccomp) detach()                             {}
func (s *Seccomp) drain(cursor *uint64, fn func(start, end uintptr)) (uint64, bool) {
	return 0, true
}
