package md

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/goportals/goportals/driverhooks"
)

// invalidate is driverhooks.Invalidate; tests replace it to watch the order of Free.
var invalidate = driverhooks.Invalidate

// Allocation is page-aligned anonymous memory mapped by the library (Alloc). Because
// the library unmaps it itself, Free tells every pin cache (driverhooks.Invalidate)
// before the pages go away, so no cached registration of the range outlives it.
//
// Allocation memory is not Go heap memory: the garbage collector neither moves nor
// frees it, and it stays mapped until Free, however long the Allocation itself is
// reachable. Using the bytes (or a Memory made from them) after Free faults, as in C.
type Allocation struct {
	mu      sync.Mutex
	mapping []byte // whole pages as mapped
	b       []byte // the n bytes asked for
	freed   bool
}

// Alloc maps n bytes (rounded up to whole pages) of zeroed, page-aligned anonymous
// memory owned by the library. Errors: ErrBadSize for n <= 0, ErrTooLarge when the
// rounded size overflows, ErrNoMemory (with the system error) when the kernel refuses,
// ErrNotSupported off Linux.
func Alloc(n int) (*Allocation, error) {
	if n <= 0 {
		return nil, fmt.Errorf("%w: %d bytes", ErrBadSize, n)
	}
	ps := int(driverhooks.PageSize())
	size := (n + ps - 1) &^ (ps - 1)
	if size < n {
		return nil, fmt.Errorf("%w: %d bytes cannot be rounded to pages", ErrTooLarge, n)
	}
	m, err := mapAnon(size)
	if err != nil {
		return nil, fmt.Errorf("md: alloc %d bytes: %w", n, err)
	}
	return &Allocation{mapping: m, b: m[:n:n]}, nil
}

// Bytes returns the allocated bytes (exactly the n asked for; the mapping may extend to
// the end of the last page). It returns nil after Free.
func (a *Allocation) Bytes() []byte {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.b
}

// Memory returns the allocated bytes as a Memory (empty after Free).
func (a *Allocation) Memory() Memory { return Bytes(a.Bytes()) }

// Free notifies the pin caches that the pages change (driverhooks.Invalidate), then
// unmaps them. Registrations of the range still held by an operation stay valid until
// released and are then deregistered; no cache hands them out again. A second Free
// returns ErrFreed and changes nothing.
func (a *Allocation) Free() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.freed {
		return ErrFreed
	}
	addr := uintptr(unsafe.Pointer(unsafe.SliceData(a.mapping)))
	invalidate(addr, uintptr(len(a.mapping)))
	if err := unmap(a.mapping); err != nil {
		return fmt.Errorf("md: free %d bytes at %#x: %w", len(a.mapping), addr, err)
	}
	a.freed = true
	a.mapping, a.b = nil, nil
	return nil
}
