package shmem

import "sort"

// allocator hands out heap offsets. Every PE runs the same sequence of
// collective allocations and frees, so every PE gets the same offsets: the
// allocator is deterministic (first fit over a sorted free list).
type allocator struct {
	free []span            // sorted by offset, never adjacent
	used map[uint64]uint64 // offset -> size of live allocations
}

type span struct{ off, n uint64 }

func (a *allocator) init(size uint64) {
	a.free = []span{{0, size}}
	a.used = map[uint64]uint64{}
}

// allocate returns the offset of n bytes aligned to align (a power of two).
func (a *allocator) allocate(n, align uint64) (uint64, bool) {
	if n == 0 {
		n = 1
	}
	n = (n + 7) &^ 7 // keep every object 8-byte aligned
	for i, s := range a.free {
		start := (s.off + align - 1) &^ (align - 1)
		if start < s.off || start-s.off > s.n || s.n-(start-s.off) < n {
			continue
		}
		var repl []span
		if start > s.off {
			repl = append(repl, span{s.off, start - s.off})
		}
		if end, send := start+n, s.off+s.n; end < send {
			repl = append(repl, span{end, send - end})
		}
		a.free = append(a.free[:i], append(repl, a.free[i+1:]...)...)
		a.used[start] = n
		return start, true
	}
	return 0, false
}

// release frees the allocation at off; false if there is none.
func (a *allocator) release(off uint64) bool {
	n, ok := a.used[off]
	if !ok {
		return false
	}
	delete(a.used, off)
	i := sort.Search(len(a.free), func(i int) bool { return a.free[i].off > off })
	a.free = append(a.free, span{})
	copy(a.free[i+1:], a.free[i:])
	a.free[i] = span{off, n}
	// Merge with the next, then with the previous.
	if i+1 < len(a.free) && a.free[i].off+a.free[i].n == a.free[i+1].off {
		a.free[i].n += a.free[i+1].n
		a.free = append(a.free[:i+1], a.free[i+2:]...)
	}
	if i > 0 && a.free[i-1].off+a.free[i-1].n == a.free[i].off {
		a.free[i-1].n += a.free[i].n
		a.free = append(a.free[:i], a.free[i+1:]...)
	}
	return true
}

// size returns the size of the live allocation at off.
func (a *allocator) size(off uint64) (uint64, bool) {
	n, ok := a.used[off]
	return n, ok
}
