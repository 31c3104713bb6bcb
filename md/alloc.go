package md

import (
	"fmt"
	"sort"
	"sync"
	"unsafe"

	"github.com/goportals/goportals/driverhooks"
)

// invalidate is driverhooks.Invalidate; tests replace it to watch the order of Free.
var invalidate = driverhooks.Invalidate

// Allocation is page-aligned memory mapped by the library (Alloc). Because the library
// unmaps it itself, Free tells every pin cache (driverhooks.Invalidate) before the
// pages go away, so no cached registration of the range outlives it.
//
// On Linux the pages belong to a memfd mapped shared (see Backing): a process of the
// node that may ptrace this one can map the same pages, which is how the engine stores
// straight into a list entry over Alloc memory (direct access) instead of sending.
//
// Allocation memory is not Go heap memory: the garbage collector neither moves nor
// frees it, and it stays mapped until Free, however long the Allocation itself is
// reachable. Using the bytes (or a Memory made from them) after Free faults, as in C.
type Allocation struct {
	mu      sync.Mutex
	mapping []byte // whole pages as mapped
	b       []byte // the n bytes asked for
	fd      int    // the memfd behind mapping
	ino     uint64 // its inode number
	freed   bool
}

// Alloc maps n bytes (rounded up to whole pages) of zeroed, page-aligned memory owned
// by the library (a shared mapping of a memfd of its own). Errors: ErrBadSize for n <= 0, ErrTooLarge when the
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
	m, fd, ino, err := mapShared(size)
	if err != nil {
		return nil, fmt.Errorf("md: alloc %d bytes: %w", n, err)
	}
	a := &Allocation{mapping: m, b: m[:n:n], fd: fd, ino: ino}
	allocs.add(a)
	// Shared, but changed by nobody but Free, which invalidates first: the pin
	// caches may keep registrations of it.
	driverhooks.Own(uintptr(unsafe.Pointer(unsafe.SliceData(m))), uintptr(len(m)))
	return a, nil
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
	// Whoever may still store into the pages from outside (direct access) is told
	// first and returns once nobody does; then the pin caches; then the pages go.
	allocs.remove(a)
	runFreeHooks(addr, uintptr(len(a.mapping)))
	invalidate(addr, uintptr(len(a.mapping)))
	driverhooks.Disown(addr)
	if err := unmap(a.mapping, a.fd); err != nil {
		return fmt.Errorf("md: free %d bytes at %#x: %w", len(a.mapping), addr, err)
	}
	a.freed = true
	a.mapping, a.b = nil, nil
	return nil
}

// Backing names the memfd pages behind a range of Alloc memory, for a process of the
// node that maps them itself (through /proc/<pid>/fd/<FD>, checking Inode).
type Backing struct {
	// FD is the memfd's descriptor in this process; it stays open until Free.
	FD int
	// Inode is the memfd's inode number: a process that opens FD by its /proc path
	// checks it, since the descriptor number may have been reused.
	Inode uint64
	// Offset is where the range starts in the memfd.
	Offset uint64
	// Size is the size of the whole memfd (the allocation's whole pages).
	Size uint64
}

// LookupBacking returns the memfd pages behind [addr, addr+n), which must lie inside
// one live allocation; ok is false otherwise (not Alloc memory, or spread over two).
func LookupBacking(addr uintptr, n uint64) (b Backing, ok bool) {
	allocs.RLock()
	defer allocs.RUnlock()
	l := allocs.list
	i := sort.Search(len(l), func(i int) bool { return l[i].base+uintptr(len(l[i].a.mapping)) > addr })
	if i == len(l) || addr < l[i].base {
		return Backing{}, false
	}
	off := uint64(addr - l[i].base)
	size := uint64(len(l[i].a.mapping))
	if n > size-off || l[i].a.fd < 0 {
		return Backing{}, false
	}
	return Backing{FD: l[i].a.fd, Inode: l[i].a.ino, Offset: off, Size: size}, true
}

// OnFree registers f to run at the start of every later Free, before the pin caches
// hear of it and before the pages are unmapped, with the range that goes away. f must
// return only once nothing it manages accesses the range any more (the engine revokes
// the direct access of the list entries in it). Hooks are never removed.
func OnFree(f func(addr, n uintptr)) {
	freeHooks.Lock()
	freeHooks.list = append(freeHooks.list, f)
	freeHooks.Unlock()
}

var freeHooks struct {
	sync.Mutex
	list []func(addr, n uintptr)
}

func runFreeHooks(addr, n uintptr) {
	freeHooks.Lock()
	l := freeHooks.list
	freeHooks.Unlock()
	for _, f := range l {
		f(addr, n)
	}
}

// allocs holds the live allocations by address, for LookupBacking.
var allocs allocTable

type allocEntry struct {
	base uintptr
	a    *Allocation
}

type allocTable struct {
	sync.RWMutex
	list []allocEntry // sorted by base; allocations never overlap
}

func (t *allocTable) add(a *Allocation) {
	base := uintptr(unsafe.Pointer(unsafe.SliceData(a.mapping)))
	t.Lock()
	defer t.Unlock()
	i := sort.Search(len(t.list), func(i int) bool { return t.list[i].base > base })
	t.list = append(t.list, allocEntry{})
	copy(t.list[i+1:], t.list[i:])
	t.list[i] = allocEntry{base: base, a: a}
}

func (t *allocTable) remove(a *Allocation) {
	t.Lock()
	defer t.Unlock()
	for i := range t.list {
		if t.list[i].a == a {
			t.list = append(t.list[:i], t.list[i+1:]...)
			return
		}
	}
}
