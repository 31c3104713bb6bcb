package me

import (
	"fmt"
	"math"
)

// Config sizes and shapes a Table.
type Config struct {
	// Matching makes the table hold match entries (PTL_NI_MATCHING); otherwise it holds
	// list entries (PTL_NI_NO_MATCHING) and the first entry of a list takes every message.
	Matching bool
	// Addressing selects physical (NID/PID) or logical (rank) source matching.
	Addressing Addressing
	// MaxEntries bounds the entries the table holds at once, including auto-unlinked
	// overflow entries still referenced by unexpected headers (limit max_entries).
	MaxEntries int
	// MaxListSize bounds the entries linked in each list (limit max_list_size).
	MaxListSize int
	// MaxUnexpectedHeaders bounds the unexpected-header list (limit
	// max_unexpected_headers). A message that would need one more is refused with
	// OutcomeUnexpectedFull. Zero means no overflow-list delivery can keep a header.
	MaxUnexpectedHeaders int
	// MaxMsgSize caps the mlength of puts and gets (limit max_msg_size); zero: no cap.
	MaxMsgSize uint64
	// MaxAtomicSize caps the mlength of atomics, fetching atomics and swaps (limit
	// max_atomic_size); zero: no cap.
	MaxAtomicSize uint64
}

// Table holds the priority list, the overflow list and the unexpected-header list of one
// portal table entry.
//
// A Table is not safe for concurrent use: the caller (the engine, from its progress
// goroutine under its own lock) serializes every call on one Table. Distinct Tables share
// nothing and may be used concurrently. Under that contract the Table is race-free: it
// starts no goroutines and touches no global state.
type Table struct {
	cfg        Config
	ar         arena
	lists      [2]matchList
	sweepFloor int // empty bins tolerated before a sweep
	seq        uint64
	ux         unexpectedList
}

// NewTable returns an empty table.
func NewTable(cfg Config) (*Table, error) {
	switch {
	case cfg.MaxEntries <= 0 || cfg.MaxEntries > math.MaxInt32-1:
		return nil, fmt.Errorf("%w: MaxEntries %d not in [1, %d]", ErrInvalidConfig, cfg.MaxEntries, math.MaxInt32-1)
	case cfg.MaxListSize <= 0:
		return nil, fmt.Errorf("%w: MaxListSize %d must be positive", ErrInvalidConfig, cfg.MaxListSize)
	case cfg.MaxUnexpectedHeaders < 0 || cfg.MaxUnexpectedHeaders > math.MaxInt32-1:
		return nil, fmt.Errorf("%w: MaxUnexpectedHeaders %d not in [0, %d]", ErrInvalidConfig, cfg.MaxUnexpectedHeaders, math.MaxInt32-1)
	case cfg.Addressing != Physical && cfg.Addressing != Logical:
		return nil, fmt.Errorf("%w: addressing %d", ErrInvalidConfig, cfg.Addressing)
	}
	t := &Table{cfg: cfg, ux: newUnexpectedList(), sweepFloor: sweepFloor}
	t.lists[ListPriority] = newMatchList()
	t.lists[ListOverflow] = newMatchList()
	return t, nil
}

// Config returns the configuration the table was created with.
func (t *Table) Config() Config { return t.cfg }

// Len returns the number of entries linked in list l (0 for an invalid list).
func (t *Table) Len(l List) int {
	if l > ListOverflow {
		return 0
	}
	return t.lists[l].n
}

// Entries returns the number of entries the table holds, linked or waiting for their
// unexpected headers to be claimed (the count MaxEntries bounds).
func (t *Table) Entries() int { return t.ar.live }

// checkEntry validates an entry's options for this table.
func (t *Table) checkEntry(e *Entry) error {
	valid := leOptions
	if t.cfg.Matching {
		valid = meOptions
	}
	if bad := e.Options &^ valid; bad != 0 {
		if t.cfg.Matching || bad&^(meOptions&^leOptions) != 0 {
			return fmt.Errorf("%w: undefined option bits %s", ErrInvalidOption, bad)
		}
		return fmt.Errorf("%w: %s valid on match entries only", ErrInvalidOption, bad)
	}
	return nil
}

// Append links a new entry at the end of list l and returns its handle, appending the
// events it produces to out (pass out[:0] of a reused slice to avoid allocation).
//
// An entry appended to the priority list first claims the unexpected headers it matches,
// in arrival order (permissions are not checked, as in the reference implementation): one
// *_OVERFLOW event each, counted on the entry's CT with EventCTOverflow. A use-once entry
// claims at most one; if it claims one it is not linked at all: AUTO_UNLINK follows and
// the returned handle is already stale. Otherwise the entry is linked and a LINK event
// follows. Claiming the last header of an auto-unlinked overflow entry frees that entry
// (AUTO_FREE). Appending to the overflow list searches nothing.
//
// Errors: ErrInvalidList, ErrInvalidOption, ErrListTooLong, ErrNoSpace, ErrBusy (a
// header it would claim is still receiving its data). On error the table is unchanged
// and out is returned as given.
func (t *Table) Append(e Entry, l List, out []Event) (Handle, []Event, error) {
	if l > ListOverflow {
		return 0, out, fmt.Errorf("%w: %d", ErrInvalidList, l)
	}
	if err := t.checkEntry(&e); err != nil {
		return 0, out, err
	}
	if t.lists[l].n >= t.cfg.MaxListSize {
		return 0, out, fmt.Errorf("%w: %s list holds %d entries", ErrListTooLong, l, t.lists[l].n)
	}
	if t.ar.live >= t.cfg.MaxEntries {
		return 0, out, fmt.Errorf("%w: table holds %d entries", ErrNoSpace, t.ar.live)
	}
	if l == ListPriority {
		if c := criteriaOf(&e); t.claimsBusy(&c, e.Options&UseOnce != 0) {
			return 0, out, ErrBusy
		}
	}
	i := t.ar.alloc()
	n := &t.ar.e[i]
	n.criteria = criteriaOf(&e)
	n.uid, n.userPtr, n.minFree = e.UID, e.UserPtr, e.MinFree
	n.offset, n.pending, n.hashed = 0, 0, false
	n.list = l
	n.prev, n.next = nilIdx, nilIdx
	h := makeHandle(i, n.gen)
	if l == ListPriority {
		c := criteriaOf(&e)
		for j := t.ux.head; j != nilIdx; {
			r := &t.ux.r[j]
			next := r.next
			if t.claims(&c, r) {
				ev := t.overflowEventFor(overflowEvent(r.hdr.Op), j, &e, h)
				ev.Post = e.Options&EventOverDisable == 0
				if e.Options&EventCTOverflow != 0 {
					ev.CT, ev.CTInc = true, ctAmount(e.Options, r.mlength)
				}
				out = append(out, ev)
				out = t.removeUnexpected(j, out)
				if e.Options&UseOnce != 0 {
					out = append(out, Event{
						Kind:    EventAutoUnlink,
						List:    ListPriority,
						Post:    e.Options&EventUnlinkDisable == 0,
						Handle:  h,
						UserPtr: e.UserPtr,
					})
					t.ar.release(i)
					return h, out, nil
				}
			}
			j = next
		}
	}
	t.link(i)
	out = append(out, Event{})
	ev := &out[len(out)-1]
	ev.Kind = EventLink
	ev.List = l
	ev.Post = e.Options&EventLinkDisable == 0
	ev.Handle = h
	ev.UserPtr = e.UserPtr
	return h, out, nil
}

// Unlink removes the entry h names from its list and releases it. Explicit unlinks
// produce no events.
//
// Errors: ErrUnknownHandle (never issued, already released, or auto-unlinked and freed);
// ErrInUse (unexpected headers still refer to data in the entry's buffer: claim or
// delete them first). On error nothing changes.
func (t *Table) Unlink(h Handle) error {
	i, ok := t.ar.lookup(h)
	if !ok {
		return fmt.Errorf("%w: %#x", ErrUnknownHandle, uint64(h))
	}
	e := &t.ar.e[i]
	if e.pending > 0 {
		return fmt.Errorf("%w: %d unexpected headers", ErrInUse, e.pending)
	}
	if e.state == stateLinked {
		t.unlinkEntry(i)
	}
	t.ar.release(i)
	return nil
}

// EntryState is a snapshot of one entry (see Table.State).
type EntryState struct {
	// Entry is the entry as appended.
	Entry Entry
	// List is the list the entry was appended to.
	List List
	// Linked is false for an auto-unlinked overflow entry kept for its unexpected headers.
	Linked bool
	// LocalOffset is the locally managed offset (ManageLocal entries).
	LocalOffset uint64
	// PendingHeaders counts unexpected headers whose data is in this entry's buffer.
	PendingHeaders int
}

// State returns a snapshot of the entry h names, or ErrUnknownHandle.
func (t *Table) State(h Handle) (EntryState, error) {
	i, ok := t.ar.lookup(h)
	if !ok {
		return EntryState{}, fmt.Errorf("%w: %#x", ErrUnknownHandle, uint64(h))
	}
	e := &t.ar.e[i]
	return EntryState{
		Entry:          e.spec(),
		List:           e.list,
		Linked:         e.state == stateLinked,
		LocalOffset:    e.offset,
		PendingHeaders: int(e.pending),
	}, nil
}
