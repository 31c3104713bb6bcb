//go:build !linux || !cgo

package driverhooks

// Monitor is the userfaultfd monitor; without Linux and cgo it cannot exist and Open
// returns ErrNoCgo (which matches ErrNotSupported).
type Monitor struct{}

// Open reports that the monitor needs Linux and cgo.
func Open() (*Monitor, error) { return nil, &OpError{Op: "open", Err: ErrNoCgo} }

// Watch reports ErrNoCgo.
func (m *Monitor) Watch(addr, length uintptr) error {
	return &OpError{Op: "watch", Addr: addr, Len: length, Err: ErrNoCgo}
}

// Unwatch reports ErrNoCgo.
func (m *Monitor) Unwatch(addr, length uintptr) error {
	return &OpError{Op: "unwatch", Addr: addr, Len: length, Err: ErrNoCgo}
}

// Close does nothing.
func (m *Monitor) Close() error { return nil }

// MonitorStats are counters of the reader thread (always zero here).
type MonitorStats struct {
	Seq, Published, Events, Pagefaults, Errors uint64
	LastErrno                                  int
	Watched                                    int
}

// Stats returns zero counters.
func (m *Monitor) Stats() MonitorStats { return MonitorStats{} }

func (m *Monitor) seq() uint64                         { return 0 }
func (m *Monitor) attach() (seq, head uint64, ok bool) { return 0, 0, false }
func (m *Monitor) detach()                             {}
func (m *Monitor) drain(cursor *uint64, fn func(start, end uintptr)) (uint64, bool) {
	return 0, false
}

// Kind reports KindUffd.
func (m *Monitor) Kind() Kind { return KindUffd }

// Window reports true: userfaultfd queues UNMAP after munmap has released the range.
func (m *Monitor) Window() bool { return true }
