//go:build !linux

package driverhooks

import "fmt"

// EBPF is the eBPF backend; it needs Linux, and OpenEBPF says so elsewhere.
type EBPF struct{}

// EBPFOptions tune OpenEBPF.
type EBPFOptions struct {
	// RingBytes is the size of the kernel ring of recorded ranges.
	RingBytes int
}

// EBPFStats are counters of an eBPF backend (always zero here).
type EBPFStats struct {
	Seq, Lost, Records, Published, Flushes, BrkHigh uint64
	Programs, Watched                               int
}

// OpenEBPF reports that the eBPF backend needs Linux (an error matching
// ErrNotSupported).
func OpenEBPF(opts *EBPFOptions) (*EBPF, error) {
	return nil, notSupported("open ebpf", fmt.Errorf("the eBPF notifier needs Linux"))
}

// notSupported wraps cause as an error matching ErrNotSupported.
func notSupported(op string, cause error) error {
	return &OpError{Op: op, Err: ErrNotSupported, Cause: cause}
}

// Kind reports KindEBPF.
func (b *EBPF) Kind() Kind { return KindEBPF }

// Window reports false.
func (b *EBPF) Window() bool { return false }

// Watch reports ErrNotSupported.
func (b *EBPF) Watch(addr, length uintptr) error {
	return &OpError{Op: "watch", Addr: addr, Len: length, Err: ErrNotSupported}
}

// Unwatch does nothing.
func (b *EBPF) Unwatch(addr, length uintptr) error { return nil }

// Close does nothing.
func (b *EBPF) Close() error { return nil }

// Stats returns zero counters.
func (b *EBPF) Stats() EBPFStats { return EBPFStats{} }

func (b *EBPF) seq() uint64                         { return 0 }
func (b *EBPF) attach() (seq, head uint64, ok bool) { return 0, 0, false }
func (b *EBPF) detach()                             {}
func (b *EBPF) drain(cursor *uint64, fn func(start, end uintptr)) (uint64, bool) {
	return 0, true
}
