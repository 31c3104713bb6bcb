package regcache

import (
	"math"

	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// lru orders the unused entries for eviction. It is a simplelru list used under the
// cache lock; simplelru never evicts by itself here (its size is unbounded) because it
// cannot veto an eviction and Add on an existing key drops the old value silently.
//
// To keep a hit free of the lock, the list is maintained lazily: an entry joins the list
// when its count first drops to zero and stays in it while it is acquired and released
// again; such a release only sets the entry's touched bit. Eviction walks from the
// oldest end: an entry in use leaves the list (its next release to zero puts it back),
// a touched entry gets a second chance at the young end, and an untouched unused entry
// is evicted. The list therefore holds every unused entry, possibly with in-use entries
// that eviction skips.
type lru[R any] struct {
	l *simplelru.LRU[*Region[R], struct{}]
}

func newLRU[R any]() *lru[R] {
	l, err := simplelru.NewLRU[*Region[R], struct{}](math.MaxInt, nil)
	if err != nil {
		panic("regcache: simplelru rejected an unbounded size: " + err.Error())
	}
	return &lru[R]{l: l}
}

// add puts e at the young end unless it is already listed.
func (l *lru[R]) add(e *Region[R]) {
	if e.inLRU.Load() == 1 {
		return
	}
	l.l.Add(e, struct{}{})
	e.inLRU.Store(1)
}

// remove takes e out of the list.
func (l *lru[R]) remove(e *Region[R]) {
	if e.inLRU.Load() == 1 {
		l.l.Remove(e)
		e.inLRU.Store(0)
	}
}

// victim returns the next entry to evict, already detached (its owner now deregisters
// it), or nil when every listed entry is in use.
func (l *lru[R]) victim() *Region[R] {
	// Each entry is looked at most twice (once more after its second chance).
	for budget := 2*l.l.Len() + 1; budget > 0; budget-- {
		e, _, ok := l.l.GetOldest()
		if !ok {
			return nil
		}
		if e.ref.Load()&refCount != 0 {
			l.remove(e)
			// A release that raced with the removal may have seen inLRU == 1 and
			// left the entry unlisted: list it again if it is unused now.
			if e.ref.Load()&(refCount|refDetached) == 0 {
				l.add(e)
			}
			continue
		}
		if e.touched.Load() == 1 {
			e.touched.Store(0)
			l.l.Get(e) // move to the young end
			continue
		}
		if e.detachIfUnused() {
			l.remove(e)
			return e
		}
		// Acquired between the check and the detach: try the next one.
		l.l.Get(e)
	}
	return nil
}
