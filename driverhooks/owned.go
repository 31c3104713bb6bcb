package driverhooks

import "sync"

// owned holds the shared mappings the library made itself and tears down only
// through Invalidate first (package md's Alloc memory: a memfd mapped shared so that
// peers on the node can map it too). A shared or file-backed mapping is refused by
// the notifiers in general, because another process can change its pages unseen;
// these ones nobody truncates or remaps but the library, so they may be watched.
var owned struct {
	sync.RWMutex
	r map[uintptr]uintptr // start -> end
}

// Own records [addr, addr+n) as a shared mapping the library owns: the notifiers
// watch it like private memory. The owner must call Invalidate for the range before
// it unmaps it, and Disown after.
func Own(addr, n uintptr) {
	owned.Lock()
	if owned.r == nil {
		owned.r = map[uintptr]uintptr{}
	}
	owned.r[addr] = addr + n
	owned.Unlock()
}

// Disown forgets the owned mapping that starts at addr.
func Disown(addr uintptr) {
	owned.Lock()
	delete(owned.r, addr)
	owned.Unlock()
}

// ownedCovers reports whether [start, end) lies inside one owned mapping.
func ownedCovers(start, end uintptr) bool {
	owned.RLock()
	defer owned.RUnlock()
	for s, e := range owned.r {
		if s <= start && end <= e {
			return true
		}
	}
	return false
}
