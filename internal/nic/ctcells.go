package nic

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/goportals/goportals/eq"
)

// cellSlots is how many counting-event values one slab holds: the largest max_cts an
// NI grants.
const cellSlots = 1 << 12

// cellSlab is the memory the counting events of one NI keep their values in (one
// eq.Cell each), outside the Go heap: on Linux a shared mapping of a memfd, so that C
// code reads a value in place (PtlCTGet without a call into Go) and a process on the
// node that maps the memfd can count into it. Slabs are never unmapped: an NI returns
// its slab to a process-wide pool at finalize and a later NI reuses it, so a stale
// reader (a Reached racing with Free, C code holding an old address) reads harmless
// memory instead of faulting.
type cellSlab struct {
	mem  []byte // cellSlots*eq.CellSize bytes
	fd   int    // the memfd behind mem, -1 where there is none
	ino  uint64 // its inode number (peers check it when they open fd by its /proc path)
	free []int  // slots given back by CT.Free
	next int    // slots below next have been handed out
}

var slabPool struct {
	sync.Mutex
	free []*cellSlab
}

// getSlab takes a slab from the pool or maps a new one.
func getSlab() (*cellSlab, error) {
	slabPool.Lock()
	defer slabPool.Unlock()
	if n := len(slabPool.free); n > 0 {
		s := slabPool.free[n-1]
		slabPool.free = slabPool.free[:n-1]
		return s, nil
	}
	mem, fd, ino, err := mapCells(cellSlots * eq.CellSize)
	if err != nil {
		return nil, fmt.Errorf("counting-event memory: %w", err)
	}
	return &cellSlab{mem: mem, fd: fd, ino: ino}, nil
}

// putSlab returns s to the pool; its cells are zeroed as they are handed out again.
func putSlab(s *cellSlab) {
	s.free, s.next = s.free[:0], 0
	slabPool.Lock()
	slabPool.free = append(slabPool.free, s)
	slabPool.Unlock()
}

// take hands out a free slot, or -1 when all are in use.
func (s *cellSlab) take() int {
	if n := len(s.free); n > 0 {
		i := s.free[n-1]
		s.free = s.free[:n-1]
		return i
	}
	if s.next == cellSlots {
		return -1
	}
	s.next++
	return s.next - 1
}

// cell returns slot i.
func (s *cellSlab) cell(i int) *eq.Cell {
	return (*eq.Cell)(unsafe.Pointer(&s.mem[i*eq.CellSize]))
}
