package regcache

import (
	"fmt"
	"unsafe"
)

// uncached registers [addr, end) for one operation. A refusal for the memlock limit
// evicts unused entries (this cache's, then the process's other caches') and
// retries; what still cannot be pinned is a *MemlockError. The caller holds no lock.
func (c *Cache[R]) uncached(mem []byte, addr, end uintptr) (*Region[R], error) {
	start, pend := addr&^(pageSize-1), (end+pageSize-1)&^(pageSize-1)
	pages := pageSlice(pageStart(mem, addr-start), pend-start)
	reg, err := c.reg.Register(pages)
	for round := 0; err != nil && isMemlock(err) && round < maxReclaims; round++ {
		need := uint64(pend - start)
		if round > 0 {
			need = ^uint64(0)
		}
		if c.reclaim(need) == 0 {
			break
		}
		c.st.memlockRetries.Add(1)
		reg, err = c.reg.Register(pages)
	}
	if err != nil {
		if isMemlock(err) {
			return nil, c.memlockError(start, pend, err)
		}
		return nil, fmt.Errorf("regcache: register [%#x,%#x): %w", start, pend, err)
	}
	e := &Region[R]{start: start, end: pend, reg: reg, objs: []unsafe.Pointer{unsafe.Pointer(unsafe.SliceData(mem))}}
	e.ref.Store(1)
	c.st.fallbacks.Add(1)
	return e, nil
}

// pageStart returns the address off bytes before mem's first byte: the start of its
// first page. For Go memory that pointer may fall on a neighbouring object of the same
// span, which the checkptr instrumentation of -race would reject, hence nocheckptr.
//
//go:nocheckptr
func pageStart(mem []byte, off uintptr) unsafe.Pointer {
	return unsafe.Add(unsafe.Pointer(unsafe.SliceData(mem)), -int(off))
}

// pageSlice returns the n bytes at p, whole pages around Go or foreign memory. The end
// of the last page may lie past the end of a Go object's span, which the -race
// checkptr instrumentation would reject although the GC only follows the start.
//
//go:nocheckptr
func pageSlice(p unsafe.Pointer, n uintptr) []byte {
	return unsafe.Slice((*byte)(p), n)
}
