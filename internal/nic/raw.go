package nic

import "github.com/goportals/goportals/md"

// rawSpec is the memory part of an entry's spec.
type rawSpec struct {
	start  []byte
	iov    [][]byte
	addr   uintptr
	length uint64
}

// rawOr returns the memory a spec names: a raw address range when start and iov
// are nil and length is not zero, else start or iov.
func rawOr(start []byte, iov [][]byte, addr uintptr, length uint64) (md.Memory, error) {
	if start == nil && iov == nil && length != 0 {
		return md.Raw(addr, length)
	}
	return memoryOf(start, iov, iov != nil)
}
