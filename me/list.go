package me

import "github.com/goportals/goportals/eq"

// List selects one of a portal table entry's two lists (eq's type: one definition
// across the module).
type List = eq.List

const (
	// ListPriority is the priority list (PTL_PRIORITY_LIST): searched first.
	ListPriority = eq.PriorityList
	// ListOverflow is the overflow list (PTL_OVERFLOW_LIST): searched when nothing in
	// the priority list matches; what lands there is remembered as an unexpected header.
	ListOverflow = eq.OverflowList
)

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
// A bin that empties stays in the bin table, so that a use-once entry re-posted with the same
// match bits (the common MPI pattern) costs no insertion; empty bins are swept once
// they outnumber both a floor and the list's hashed entries, which bounds the memory a
// stream of distinct match bits can hold.
type matchList struct {
	bins   binTable // match bits -> chain of exact-match entries
	wild   chain
	n      int // linked entries
	hashed int // linked entries in bins
	empty  int // bins in the bin table with no entry
}

// sweepFloor is the number of empty bins always tolerated before a sweep (the sweep cost
// is amortized over the unlinks that emptied them) (the default of
// Table.sweepFloor; tests lower it to exercise sweeps).
const sweepFloor = 256

func newMatchList() matchList {
	return matchList{wild: newChain()}
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
		e.hashed = false
		t.pushBack(&l.wild, i)
		return
	}
	b := l.bins.lookup(e.matchBits)
	if b == nil {
		b = l.bins.insert(e.matchBits)
	} else if b.head == nilIdx {
		l.empty--
	}
	l.hashed++
	e.hashed = true
	t.pushBack(&b.chain, i)
}

// unlinkEntry takes a linked entry i out of its list.
func (t *Table) unlinkEntry(i int32) {
	e := &t.ar.e[i]
	l := &t.lists[e.list]
	l.n--
	if !e.hashed {
		t.remove(&l.wild, i)
		return
	}
	e.hashed = false
	l.hashed--
	b := l.bins.lookup(e.matchBits)
	t.remove(&b.chain, i)
	if b.head == nilIdx {
		l.empty++
		if l.empty > t.sweepFloor && l.empty > l.hashed {
			l.bins.sweep(l.hashed)
			l.empty = 0
		}
	}
}
