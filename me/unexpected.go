package me

// uhdr is one unexpected header: a message that matched an overflow-list entry and waits
// for a priority-list append or a search to claim it.
type uhdr struct {
	hdr     Header
	data    int32  // arena index of the overflow entry holding the data
	offset  uint64 // where in that entry's buffer the data landed
	mlength uint64
	prev    int32
	next    int32
	busy    bool // the data is still moving into the overflow entry
}

// UnexpectedID names one unexpected header while it is held (see Table.SetBusy).
type UnexpectedID int32

// SetBusy marks the unexpected header id as still receiving its data (busy true), or
// as complete. While a header is busy, Append and Search that would claim it fail with
// ErrBusy and change nothing, so no one is told where the data is before it has
// arrived; a busy header cannot be removed, so id stays valid until SetBusy(id, false).
func (t *Table) SetBusy(id UnexpectedID, busy bool) {
	if int(id) >= 0 && int(id) < len(t.ux.r) {
		t.ux.r[id].busy = busy
	}
}

// claimsBusy reports whether an entry with criteria c would claim a busy header: the
// same walk Append and Search make, a use-once entry stopping at its first claim.
func (t *Table) claimsBusy(c *criteria, useOnce bool) bool {
	for j := t.ux.head; j != nilIdx; j = t.ux.r[j].next {
		r := &t.ux.r[j]
		if t.claims(c, r) {
			if r.busy {
				return true
			}
			if useOnce {
				return false
			}
		}
	}
	return false
}

// unexpectedList keeps unexpected headers in arrival order in a slot arena with a free
// list, bounded by Config.MaxUnexpectedHeaders.
type unexpectedList struct {
	r          []uhdr
	free       []int32
	head, tail int32
	n          int
}

func newUnexpectedList() unexpectedList { return unexpectedList{head: nilIdx, tail: nilIdx} }

// UnexpectedHeader is a snapshot of one unexpected header (see Table.Unexpected).
type UnexpectedHeader struct {
	// Header is the message as it arrived.
	Header Header
	// DataHandle and DataUserPtr name the overflow-list entry that holds the data.
	DataHandle  Handle
	DataUserPtr uint64
	// LocalOffset and MLength say where in that entry's buffer the data is.
	LocalOffset, MLength uint64
}

// addUnexpected records h as delivered to overflow entry i at offset for mlength bytes.
func (t *Table) addUnexpected(h *Header, i int32, offset, mlength uint64) UnexpectedID {
	u := &t.ux
	var j int32
	if n := len(u.free); n > 0 {
		j = u.free[n-1]
		u.free = u.free[:n-1]
	} else {
		u.r = append(u.r, uhdr{})
		j = int32(len(u.r) - 1)
	}
	r := &u.r[j]
	*r = uhdr{hdr: *h, data: i, offset: offset, mlength: mlength, prev: u.tail, next: nilIdx}
	if u.tail == nilIdx {
		u.head = j
	} else {
		u.r[u.tail].next = j
	}
	u.tail = j
	u.n++
	t.ar.e[i].pending++
	return UnexpectedID(j)
}

// removeUnexpected drops header j. When it was the last header referring to an
// auto-unlinked overflow entry, that entry is released and its AUTO_FREE event appended.
func (t *Table) removeUnexpected(j int32, out []Event) []Event {
	u := &t.ux
	r := &u.r[j]
	if r.prev == nilIdx {
		u.head = r.next
	} else {
		u.r[r.prev].next = r.next
	}
	if r.next == nilIdx {
		u.tail = r.prev
	} else {
		u.r[r.next].prev = r.prev
	}
	i := r.data
	*r = uhdr{prev: nilIdx, next: nilIdx}
	u.free = append(u.free, j)
	u.n--
	e := &t.ar.e[i]
	e.pending--
	if e.pending == 0 && e.state == stateDetached {
		out = t.autoFree(i, out)
	}
	return out
}

// autoFree appends the AUTO_FREE event of auto-unlinked overflow entry i and releases it.
func (t *Table) autoFree(i int32, out []Event) []Event {
	e := &t.ar.e[i]
	out = append(out, Event{
		Kind:    EventAutoFree,
		List:    ListOverflow,
		Post:    e.options&EventUnlinkDisable == 0,
		Handle:  makeHandle(i, e.gen),
		UserPtr: e.userPtr,
	})
	t.ar.release(i)
	return out
}

// overflowEventFor builds the overflow (or search) event of header j for the claiming
// entry described by spec and handle.
func (t *Table) overflowEventFor(kind EventKind, j int32, spec *Entry, h Handle) Event {
	r := &t.ux.r[j]
	d := &t.ar.e[r.data]
	return Event{
		Kind:        kind,
		List:        ListOverflow,
		Handle:      h,
		UserPtr:     spec.UserPtr,
		DataHandle:  makeHandle(r.data, d.gen),
		DataUserPtr: d.userPtr,
		LocalOffset: r.offset,
		MLength:     r.mlength,
		Header:      r.hdr,
	}
}

// claims reports whether the entry spec (not yet linked, local offset zero) would match
// the unexpected header r: the same criteria as an incoming message, against the
// entry's initial state. A list entry claims every header.
func (t *Table) claims(c *criteria, r *uhdr) bool {
	if !t.cfg.Matching {
		return true
	}
	return t.accepts(c, 0, &r.hdr)
}

// permitted reports whether a message may use an entry: the uid check and the operation
// check of the Portals permission rules.
func permitted(uid UID, opts Options, h *Header) Outcome {
	if uid != UIDAny && uid != h.UID {
		return OutcomePermViolation
	}
	if opts&h.Op.needs() != h.Op.needs() {
		return OutcomeOpViolation
	}
	return OutcomeMatched
}

// UnexpectedLen returns the number of unexpected headers held.
func (t *Table) UnexpectedLen() int { return t.ux.n }

// Unexpected appends snapshots of the unexpected headers, in arrival order, to out.
func (t *Table) Unexpected(out []UnexpectedHeader) []UnexpectedHeader {
	for j := t.ux.head; j != nilIdx; j = t.ux.r[j].next {
		r := &t.ux.r[j]
		d := &t.ar.e[r.data]
		out = append(out, UnexpectedHeader{
			Header:      r.hdr,
			DataHandle:  makeHandle(r.data, d.gen),
			DataUserPtr: d.userPtr,
			LocalOffset: r.offset,
			MLength:     r.mlength,
		})
	}
	return out
}
