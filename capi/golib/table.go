package main

import (
	"sync"
	"sync/atomic"

	"github.com/goportals/goportals/portals"
)

// Slots: the shim hands out slot numbers below maxSlots and encodes them in the
// handles it returns; this table maps a slot to its Go object.
const (
	chunkBits = 10
	chunkSize = 1 << chunkBits
	maxSlots  = chunkSize * chunkSize
)

// entry is the Go side of one handle.
type entry struct {
	obj     any         // *portals.NI, *portals.MD, *portals.ME, *portals.EQ or *portals.CT
	ni      *portals.NI // the NI the object belongs to
	logical bool        // ni addresses processes by rank
	refs    int         // for an NI: the NIInit calls not yet matched by NIFini (under tableMu)
	handle  uint32      // for an ME or LE: the handle the shim hands out for it
}

type chunk [chunkSize]atomic.Pointer[entry]

var (
	table   [chunkSize]atomic.Pointer[chunk]
	tableMu sync.Mutex // creates chunks; guards NI reference counts and niSlots
	niSlots = map[*portals.NI]uint32{}
)

// slotOf returns the cell of slot, creating its chunk when create is set.
func slotOf(slot uint32, create bool) *atomic.Pointer[entry] {
	if slot >= maxSlots {
		return nil
	}
	c := table[slot>>chunkBits].Load()
	if c == nil {
		if !create {
			return nil
		}
		tableMu.Lock()
		if c = table[slot>>chunkBits].Load(); c == nil {
			c = new(chunk)
			table[slot>>chunkBits].Store(c)
		}
		tableMu.Unlock()
	}
	return &c[slot&(chunkSize-1)]
}

// store records obj (of ni) at slot.
func store(slot uint32, obj any, ni *portals.NI) bool {
	p := slotOf(slot, true)
	if p == nil {
		return false
	}
	p.Store(&entry{obj: obj, ni: ni, logical: ni != nil && ni.Logical()})
	return true
}

// load returns the entry at slot, or nil.
func load(slot uint32) *entry {
	p := slotOf(slot, false)
	if p == nil {
		return nil
	}
	return p.Load()
}

// forget forgets slot.
func forget(slot uint32) {
	if p := slotOf(slot, false); p != nil {
		p.Store(nil)
	}
}

// lookup returns the object of type T at slot.
func lookup[T any](slot uint32) (T, *entry, bool) {
	e := load(slot)
	if e == nil {
		var zero T
		return zero, nil, false
	}
	v, ok := e.obj.(T)
	return v, e, ok
}

// sweep forgets every slot whose object belongs to ni (all slots when ni is nil).
func sweep(ni *portals.NI) {
	for i := range table {
		c := table[i].Load()
		if c == nil {
			continue
		}
		for j := range c {
			if e := c[j].Load(); e != nil && (ni == nil || e.ni == ni) {
				c[j].Store(nil)
			}
		}
	}
	tableMu.Lock()
	if ni == nil {
		clear(niSlots)
	} else {
		delete(niSlots, ni)
	}
	tableMu.Unlock()
}
