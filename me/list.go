package me

// List selects one of a portal table entry's two lists.
type List uint8

const (
	// ListPriority is the priority list (PTL_PRIORITY_LIST): searched first.
	ListPriority List = iota
	// ListOverflow is the overflow list (PTL_OVERFLOW_LIST): searched when nothing in
	// the priority list matches; what lands there is remembered as an unexpected header.
	ListOverflow
)

// String returns the name of the list.
func (l List) String() string {
	switch l {
	case ListPriority:
		return "priority"
	case ListOverflow:
		return "overflow"
	}
	return "invalid-list"
}

// chain is a doubly linked list of arena indices, in link order.
type chain struct {
	head, tail int32
}

func newChain() chain { return chain{head: nilIdx, tail: nilIdx} }

// matchList is one list of a table. Exact-match entries (IgnoreBits == 0) are chained in
// hash bins keyed by their match bits; all other entries, and every entry of a list-entry
// table, are chained in the ordered list. Both chains are in link order, and every entry
// has a sequence number that grows with link order, so the first entry in list order that
// accepts a message is the accepting entry with the smallest sequence number.
//
// A bin that empties stays in the map, so that a use-once entry re-posted with the same
// match bits (the common MPI pattern) costs no map insertion; empty bins are swept once
// they outnumber both a floor and the list's hashed entries, which bounds the memory a
// stream of distinct match bits can hold.
type matchList struct {
	bins   map[uint64]int32 // match bits -> index in Table.bins
	wild   chain
	n      int // linked entries
	hashed int // linked entries in bins
	empty  int // bins in the map with no entry
}

// sweepFloor is the number of empty bins always tolerated before a sweep (the default of
// Table.sweepFloor; tests lower it to exercise sweeps).
const sweepFloor = 256

func newMatchList() matchList {
	return matchList{bins: make(map[uint64]int32), wild: newChain()}
}

// pushBack appends entry i to chain c.
func (t *Table) pushBack(c *chain, i int32) {
	e := &t.ar.e[i]
	e.prev, e.next = c.tail, nilIdx
	if c.tail == nilIdx {
		c.head = i
	} else {
		t.ar.e[c.tail].next = i
	}
	c.tail = i
}

// remove unchains entry i from chain c.
func (t *Table) remove(c *chain, i int32) {
	e := &t.ar.e[i]
	if e.prev == nilIdx {
		c.head = e.next
	} else {
		t.ar.e[e.prev].next = e.next
	}
	if e.next == nilIdx {
		c.tail = e.prev
	} else {
		t.ar.e[e.next].prev = e.prev
	}
	e.prev, e.next = nilIdx, nilIdx
}

// link puts entry i at the end of its list, giving it the next sequence number.
func (t *Table) link(i int32) {
	e := &t.ar.e[i]
	t.seq++
	e.seq = t.seq
	e.state = stateLinked
	l := &t.lists[e.list]
	l.n++
	if !t.cfg.Matching || e.ignoreBits != 0 {
		e.bin = nilIdx
		t.pushBack(&l.wild, i)
		return
	}
	b, ok := l.bins[e.matchBits]
	if !ok {
		b = t.newBin()
		l.bins[e.matchBits] = b
	} else if t.bins[b].head == nilIdx {
		l.empty--
	}
	l.hashed++
	e.bin = b
	t.pushBack(&t.bins[b], i)
}

// unlinkEntry takes a linked entry i out of its list.
func (t *Table) unlinkEntry(i int32) {
	e := &t.ar.e[i]
	l := &t.lists[e.list]
	l.n--
	b := e.bin
	if b == nilIdx {
		t.remove(&l.wild, i)
		return
	}
	e.bin = nilIdx
	l.hashed--
	t.remove(&t.bins[b], i)
	if t.bins[b].head == nilIdx {
		l.empty++
		if l.empty > t.sweepFloor && l.empty > l.hashed {
			t.sweep(l)
		}
	}
}

// sweep drops the empty bins of l. Its cost is amortized over the unlinks that emptied
// them.
func (t *Table) sweep(l *matchList) {
	for k, b := range l.bins {
		if t.bins[b].head == nilIdx {
			delete(l.bins, k)
			t.binFree = append(t.binFree, b)
		}
	}
	l.empty = 0
}

// newBin returns the index of an empty hash bin, reusing a dropped one when possible.
// Bins live in one dense slice (Table.bins), so that the entry arena holds no pointers.
func (t *Table) newBin() int32 {
	if n := len(t.binFree); n > 0 {
		b := t.binFree[n-1]
		t.binFree = t.binFree[:n-1]
		t.bins[b] = newChain()
		return b
	}
	t.bins = append(t.bins, newChain())
	return int32(len(t.bins) - 1)
}
