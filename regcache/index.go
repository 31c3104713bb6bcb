package regcache

import (
	"sync/atomic"

	"github.com/google/btree"
)

// index is the interval index over the cached entries: a B-tree ordered by start of
// non-overlapping page ranges, so the entry containing [start, end) is the one with
// the greatest start <= start, and a small lookaside table of atomic pointers (one slot
// per page number modulo its size) that lets a hit skip the tree and the lock.
// Mutations happen under the cache lock; the lookaside is read without it.
type index[R any] struct {
	tree  *btree.BTreeG[*Region[R]]
	pivot Region[R] // lookup key, used under the cache lock only
	look  [lookasideSlots]atomic.Pointer[Region[R]]
	found []*Region[R] // scratch for overlap queries
}

const lookasideSlots = 4096

func byStart[R any](a, b *Region[R]) bool { return a.start < b.start }

func newIndex[R any]() *index[R] {
	return &index[R]{tree: btree.NewG(16, byStart[R])}
}

func (x *index[R]) slot(addr uintptr) *atomic.Pointer[Region[R]] {
	return &x.look[(addr>>pageShift)&(lookasideSlots-1)]
}

// fast returns the lookaside candidate for [addr, end), or nil.
func (x *index[R]) fast(addr, end uintptr) *Region[R] {
	e := x.slot(addr).Load()
	if e != nil && e.start <= addr && end <= e.end {
		return e
	}
	return nil
}

// remember puts e in the lookaside slot of addr.
func (x *index[R]) remember(addr uintptr, e *Region[R]) { x.slot(addr).Store(e) }

// find returns the entry containing [start, end), or nil.
func (x *index[R]) find(start, end uintptr) *Region[R] {
	x.pivot.start = start
	var hit *Region[R]
	x.tree.DescendLessOrEqual(&x.pivot, func(e *Region[R]) bool {
		if e.end >= end {
			hit = e
		}
		return false
	})
	return hit
}

// overlapping returns the entries overlapping [start, end), in address order. The
// slice is scratch space, valid until the next call.
func (x *index[R]) overlapping(start, end uintptr) []*Region[R] {
	x.found = x.found[:0]
	x.pivot.start = start
	x.tree.DescendLessOrEqual(&x.pivot, func(e *Region[R]) bool {
		if e.end > start && e.start != start {
			x.found = append(x.found, e)
		}
		return false
	})
	x.pivot.start = start
	x.tree.AscendGreaterOrEqual(&x.pivot, func(e *Region[R]) bool {
		if e.start >= end {
			return false
		}
		x.found = append(x.found, e)
		return true
	})
	return x.found
}

// insert adds e (which must not overlap any entry).
func (x *index[R]) insert(e *Region[R]) { x.tree.ReplaceOrInsert(e) }

// remove drops e from the tree and from every lookaside slot that may hold it.
func (x *index[R]) remove(e *Region[R]) {
	if got, ok := x.tree.Get(e); ok && got == e {
		x.tree.Delete(e)
	}
	pages := (e.end - e.start) >> pageShift
	if pages > lookasideSlots {
		pages = lookasideSlots
	}
	for i := uintptr(0); i < pages; i++ {
		x.slot(e.start+i<<pageShift).CompareAndSwap(e, nil)
	}
}

// len returns the number of entries.
func (x *index[R]) len() int { return x.tree.Len() }

// all returns every entry (scratch slice, valid until the next call).
func (x *index[R]) all() []*Region[R] {
	x.found = x.found[:0]
	x.tree.Ascend(func(e *Region[R]) bool {
		x.found = append(x.found, e)
		return true
	})
	return x.found
}
