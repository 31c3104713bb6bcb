//go:build linux

package driverhooks

import (
	"encoding/binary"
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// pagemap entry bits (Documentation/admin-guide/mm/pagemap.rst).
const (
	pmPresent = 1 << 63
	pmPFNMask = 1<<55 - 1
)

// ErrNoPFN reports that /proc/self/pagemap hides page frame numbers (reading them
// needs CAP_SYS_ADMIN). It matches ErrNotSupported.
var ErrNoPFN = fmt.Errorf("pagemap hides page frame numbers (needs CAP_SYS_ADMIN): %w", ErrNotSupported)

// PFNOracle reads the page frame numbers behind virtual pages from
// /proc/self/pagemap. A page that is unmapped and faulted in again gets a new frame, so
// comparing a snapshot taken at registration with the frames at a cache hit detects a
// stale hit. It is safe for concurrent use.
type PFNOracle struct {
	f *os.File
}

// OpenPFNOracle opens /proc/self/pagemap and checks that it shows frame numbers.
func OpenPFNOracle() (*PFNOracle, error) {
	f, err := os.Open("/proc/self/pagemap")
	if err != nil {
		return nil, &OpError{Op: "pagemap", Err: ErrNotSupported, Cause: err}
	}
	o := &PFNOracle{f: f}
	probe := new([64]byte) // heap page that is certainly present once written
	probe[0] = 1
	p := uintptr(unsafe.Pointer(probe)) &^ (pageSize - 1)
	var e [1]uint64
	if err := o.read(p, e[:]); err != nil {
		f.Close()
		return nil, err
	}
	probe[1] = probe[0]
	if e[0]&pmPresent != 0 && e[0]&pmPFNMask == 0 {
		f.Close()
		return nil, &OpError{Op: "pagemap", Err: ErrNoPFN}
	}
	return o, nil
}

// Close closes the pagemap file.
func (o *PFNOracle) Close() error { return o.f.Close() }

func (o *PFNOracle) read(addr uintptr, dst []uint64) error {
	buf := unsafe.Slice((*byte)(unsafe.Pointer(&dst[0])), len(dst)*8)
	off := int64(addr/pageSize) * 8
	for done := 0; done < len(buf); {
		n, err := unix.Pread(int(o.f.Fd()), buf[done:], off+int64(done))
		if err == unix.EINTR {
			continue
		}
		if err != nil || n == 0 {
			return &OpError{Op: "pagemap", Addr: addr, Len: uintptr(len(dst)) * pageSize, Err: ErrNotSupported, Cause: err}
		}
		done += n
	}
	for i := range dst {
		// pagemap is host-endian; make that explicit for the mask below.
		dst[i] = binary.NativeEndian.Uint64(buf[i*8:])
		dst[i] &= pmPresent | pmPFNMask
	}
	return nil
}

// Snapshot returns one word per page of [addr, addr+length) (rounded out to pages):
// the frame number with the present bit, 0 for a page not present.
func (o *PFNOracle) Snapshot(addr, length uintptr) ([]uint64, error) {
	start, end := addr&^(pageSize-1), (addr+length+pageSize-1)&^(pageSize-1)
	if length == 0 || end <= start {
		return nil, &OpError{Op: "pagemap", Addr: addr, Len: length, Err: ErrBadRange}
	}
	snap := make([]uint64, (end-start)/pageSize)
	if err := o.read(start, snap); err != nil {
		return nil, err
	}
	return snap, nil
}

// Verify compares the frames now behind [addr, addr+length) with snap, a Snapshot
// taken of a range starting at the page snapStart. It returns the number of pages
// whose frame changed (0: not stale).
func (o *PFNOracle) Verify(snapStart uintptr, snap []uint64, addr, length uintptr) (int, error) {
	start, end := addr&^(pageSize-1), (addr+length+pageSize-1)&^(pageSize-1)
	if length == 0 || start < snapStart || (end-snapStart)/pageSize > uintptr(len(snap)) {
		return 0, &OpError{Op: "pagemap", Addr: addr, Len: length, Err: ErrBadRange}
	}
	first := (start - snapStart) / pageSize
	var small [64]uint64
	var cur []uint64
	if n := int((end - start) / pageSize); n <= len(small) {
		cur = small[:n]
	} else {
		cur = make([]uint64, n)
	}
	if err := o.read(start, cur); err != nil {
		return 0, err
	}
	bad := 0
	for i, v := range cur {
		if v != snap[first+uintptr(i)] {
			bad++
		}
	}
	return bad, nil
}
