package nic

import (
	"errors"
	"fmt"

	"github.com/goportals/goportals/eq"
	"github.com/goportals/goportals/internal/mdreg"
	"github.com/goportals/goportals/md"
	"github.com/goportals/goportals/me"
)

// MESpec describes a match entry (ptl_me_t): the memory it exposes (Start, or
// Iovecs), its counting event, the user allowed, options, the initiator it accepts
// (MatchID, with NIDAny/PIDAny/RankAny wildcards), the match and ignore bits, and
// min_free for locally managed entries.
//
// As in MDSpec, Addr and Length name a raw address range instead of Go memory when
// Start and Iovecs are nil and Length is not zero; the offsets of the entry (and the
// Start of its events) are then relative to Addr, and Event.Addr is the address of
// the data.
type MESpec struct {
	Start      []byte
	Iovecs     [][]byte
	Addr       uintptr
	Length     uint64
	CT         *CT
	UID        UID
	Options    MEOptions
	MatchID    ProcessID
	MatchBits  MatchBits
	IgnoreBits MatchBits
	MinFree    uint64
	OnUnlink   func() // called, under the engine lock, when the engine unlinks the entry itself
}

// LESpec describes a list entry (ptl_le_t), the form of an entry on an NI without
// matching.
type LESpec struct {
	Start    []byte
	Iovecs   [][]byte
	Addr     uintptr // a raw range, as in MESpec
	Length   uint64
	CT       *CT
	UID      UID
	Options  MEOptions
	OnUnlink func() // as in MESpec
}

// entry is the engine state of an ME or LE: its memory and counting event.
type entry struct {
	h        me.Handle
	mem      md.Memory
	flat     []byte // mem's bytes when it is one Go slice (flatOf), for the eager put path
	ct       *CT
	userPtr  uint64
	pinned   *mdreg.Pinned
	inflight int    // operations moving data into or out of the entry
	onUnlink func() // the spec's OnUnlink
}

func (e *entry) release() {
	if e.pinned != nil {
		e.pinned.Release()
		e.pinned = nil
	}
}

// ME is a match entry handle (ptl_handle_me_t); an LE handle is the same type on
// an NI without matching.
type ME struct {
	ni *NI
	t  *pt
	h  me.Handle
	e  *entry
}

// LE is a list entry handle (ptl_handle_le_t).
type LE = ME

func memoryOf(start []byte, iov [][]byte, iovec bool) (md.Memory, error) {
	if iovec {
		return md.Iovecs(iov)
	}
	return md.Bytes(start), nil
}

// MEAppend appends a match entry to a list of a portal table entry (PtlMEAppend).
func (ni *NI) MEAppend(idx PTIndex, s MESpec, list List, userPtr uint64) (*ME, error) {
	if err := ni.check("PtlMEAppend"); err != nil {
		return nil, err
	}
	if !ni.Matching() {
		return nil, opErr("PtlMEAppend", ArgInvalid, fmt.Errorf("NI without matching: use LEAppend"))
	}
	return ni.appendEntry("PtlMEAppend", idx, me.Entry{UID: s.UID, Options: s.Options, MatchID: s.MatchID,
		MatchBits: s.MatchBits, IgnoreBits: s.IgnoreBits, MinFree: s.MinFree, UserPtr: userPtr},
		rawSpec{s.Start, s.Iovecs, s.Addr, s.Length}, s.CT, list, s.OnUnlink)
}

// LEAppend appends a list entry (PtlLEAppend).
func (ni *NI) LEAppend(idx PTIndex, s LESpec, list List, userPtr uint64) (*LE, error) {
	if err := ni.check("PtlLEAppend"); err != nil {
		return nil, err
	}
	if ni.Matching() {
		return nil, opErr("PtlLEAppend", ArgInvalid, fmt.Errorf("NI with matching: use MEAppend"))
	}
	return ni.appendEntry("PtlLEAppend", idx, me.Entry{UID: s.UID, Options: s.Options, UserPtr: userPtr},
		rawSpec{s.Start, s.Iovecs, s.Addr, s.Length}, s.CT, list, s.OnUnlink)
}

func (ni *NI) appendEntry(op string, idx PTIndex, ent me.Entry, spec rawSpec, ct *CT, list List, onUnlink func()) (*ME, error) {
	if err := ni.check(op); err != nil {
		return nil, err
	}
	if spec.iov != nil && len(spec.iov) > ni.limits.MaxIovecs {
		return nil, opErr(op, ArgInvalid, fmt.Errorf("%d iovecs, max_iovecs is %d", len(spec.iov), ni.limits.MaxIovecs))
	}
	mem, err := rawOr(spec.start, spec.iov, spec.addr, spec.length)
	if err != nil {
		return nil, opErr(op, ArgInvalid, err)
	}
	if ct != nil && ct.ni != ni {
		return nil, opErr(op, ArgInvalid, fmt.Errorf("counting event of another NI"))
	}
	ent.Length = mem.Len()
	ni.mu.Lock()
	defer ni.mu.Unlock()
	t := ni.ptAt(idx)
	if t == nil {
		return nil, opErr(op, ArgInvalid, fmt.Errorf("portal index %d not allocated", idx))
	}
	// PTOnlyUseOnce and PTOnlyTruncate are hints: entries are never refused for them.
	e := &entry{mem: mem, flat: flatOf(mem), ct: ct, userPtr: ent.UserPtr, onUnlink: onUnlink}
	var h me.Handle
	var evs []me.Event
	var gone, full bool
	ok := ni.waitEngine(func() bool {
		// Checked on every try: the wait releases the engine lock.
		if gone = ni.pts[idx] != t; gone {
			return true
		}
		if full = ni.entryCount() >= ni.limits.MaxEntries; full {
			return true
		}
		// A header it would claim whose data is still arriving: wait for the data.
		h, evs, err = t.table.Append(ent, list, ni.evbuf[:0])
		return !errors.Is(err, me.ErrBusy)
	})
	if !ok || gone {
		return nil, opErr(op, ArgInvalid, fmt.Errorf("the NI or portal table entry went away while waiting"))
	}
	if full {
		return nil, opErr(op, NoSpace, fmt.Errorf("the NI holds max_entries (%d) entries", ni.limits.MaxEntries))
	}
	if err != nil {
		return nil, opErr(op, meErrno(err), err)
	}
	e.h = h
	t.entries[h] = e
	ni.deliverAll(t, evs)
	ni.directAppended(t, e, list)
	return &ME{ni: ni, t: t, h: h, e: e}, nil
}

// meErrno maps a me error to the code the reference answers: a list over
// max_list_size is NO_SPACE on either list, as in the reference.
func meErrno(err error) Errno {
	switch {
	case errors.Is(err, me.ErrListTooLong), errors.Is(err, me.ErrNoSpace):
		return NoSpace
	case errors.Is(err, me.ErrInUse):
		return InUse
	}
	return ArgInvalid
}

// entryCount is the number of entries the NI holds across all its portal table
// entries, including unlinked overflow entries kept for their unexpected headers (the
// count max_entries bounds). Called with ni.mu held.
func (ni *NI) entryCount() int {
	n := 0
	for _, t := range ni.pts {
		if t != nil {
			n += t.table.Entries()
		}
	}
	return n
}

// Unlink removes the entry (PtlMEUnlink / PtlLEUnlink).
func (m *ME) Unlink() error {
	const op = "PtlMEUnlink"
	if m == nil || m.ni == nil {
		return nilHandle(op, "entry")
	}
	ni := m.ni
	ni.mu.Lock()
	defer ni.mu.Unlock()
	if e := m.t.entries[m.h]; e != nil && e.inflight > 0 {
		return opErr(op, InUse, fmt.Errorf("%d operations still moving data", e.inflight))
	}
	if err := m.t.table.Unlink(m.h); err != nil {
		return opErr(op, meErrno(err), err)
	}
	if e := m.t.entries[m.h]; e != nil {
		e.release()
		delete(m.t.entries, m.h)
	}
	ni.directUnlinked(m.t)
	return nil
}

// MESearch searches the unexpected headers of a portal table entry with a match
// entry that is never linked (PtlMESearch).
func (ni *NI) MESearch(idx PTIndex, s MESpec, sop SearchOp, userPtr uint64) error {
	if err := ni.check("PtlMESearch"); err != nil {
		return err
	}
	if !ni.Matching() {
		return opErr("PtlMESearch", ArgInvalid, fmt.Errorf("NI without matching: use LESearch"))
	}
	return ni.search("PtlMESearch", idx, me.Entry{UID: s.UID, Options: s.Options, MatchID: s.MatchID,
		MatchBits: s.MatchBits, IgnoreBits: s.IgnoreBits, MinFree: s.MinFree, UserPtr: userPtr}, sop)
}

// LESearch is MESearch for list entries (PtlLESearch).
func (ni *NI) LESearch(idx PTIndex, s LESpec, sop SearchOp, userPtr uint64) error {
	if err := ni.check("PtlLESearch"); err != nil {
		return err
	}
	if ni.Matching() {
		return opErr("PtlLESearch", ArgInvalid, fmt.Errorf("NI with matching: use MESearch"))
	}
	return ni.search("PtlLESearch", idx, me.Entry{UID: s.UID, Options: s.Options, UserPtr: userPtr}, sop)
}

func (ni *NI) search(op string, idx PTIndex, ent me.Entry, sop SearchOp) error {
	if err := ni.check(op); err != nil {
		return err
	}
	ni.mu.Lock()
	defer ni.mu.Unlock()
	t := ni.ptAt(idx)
	if t == nil {
		return opErr(op, ArgInvalid, fmt.Errorf("portal index %d not allocated", idx))
	}
	var evs []me.Event
	var err error
	var gone bool
	ok := ni.waitEngine(func() bool {
		if gone = ni.pts[idx] != t; gone {
			return true
		}
		evs, err = t.table.Search(ent, sop, ni.evbuf[:0])
		return !errors.Is(err, me.ErrBusy)
	})
	if !ok || gone {
		return opErr(op, ArgInvalid, fmt.Errorf("the NI or portal table entry went away while waiting"))
	}
	if err != nil {
		return opErr(op, ArgInvalid, err)
	}
	ni.deliverAll(t, evs)
	return nil
}

var meKinds = [...]eq.EventKind{
	me.EventPut: eq.EventPut, me.EventGet: eq.EventGet, me.EventAtomic: eq.EventAtomic,
	me.EventFetchAtomic: eq.EventFetchAtomic, me.EventPutOverflow: eq.EventPutOverflow,
	me.EventGetOverflow: eq.EventGetOverflow, me.EventAtomicOverflow: eq.EventAtomicOverflow,
	me.EventFetchAtomicOverflow: eq.EventFetchAtomicOverflow, me.EventAutoUnlink: eq.EventAutoUnlink,
	me.EventAutoFree: eq.EventAutoFree, me.EventSearch: eq.EventSearch, me.EventLink: eq.EventLink,
	me.EventPTDisabled: eq.EventPTDisabled,
}

// deliverAll posts and counts the events a me operation produced. Called with
// ni.mu held.
func (ni *NI) deliverAll(t *pt, evs []me.Event) {
	ni.deliverEvents(t, evs, eq.NIOK, nil)
	ni.evbuf = evs[:0]
}

// deliverEvents delivers evs in the order the reference reports them (me lists an
// unlink at match time, before the data moved): the communication and overflow
// events first; then the AUTO_UNLINK of an entry that is also freed here, so that its
// AUTO_FREE comes strictly last of its events; then AUTO_FREE; then the AUTO_UNLINK
// of an appending entry that claimed an unexpected header. e, if not nil, is the
// matched entry, which may already have left the table.
func (ni *NI) deliverEvents(t *pt, evs []me.Event, fail eq.NIFail, e *entry) {
	if len(evs) == 1 && evs[0].Kind != me.EventAutoUnlink && evs[0].Kind != me.EventAutoFree {
		ni.deliver(t, &evs[0], fail, e) // the common case: one event, which the passes order first
		return
	}
	freed := func(h me.Handle) bool {
		for i := range evs {
			if evs[i].Kind == me.EventAutoFree && evs[i].Handle == h {
				return true
			}
		}
		return false
	}
	for pass := 0; pass < 4; pass++ {
		for i := range evs {
			k := evs[i].Kind
			var now bool
			switch pass {
			case 0:
				now = k != me.EventAutoUnlink && k != me.EventAutoFree
			case 1:
				now = k == me.EventAutoUnlink && freed(evs[i].Handle)
			case 2:
				now = k == me.EventAutoFree
			case 3:
				now = k == me.EventAutoUnlink && !freed(evs[i].Handle)
			}
			if now {
				ni.deliver(t, &evs[i], fail, e)
			}
		}
	}
}

// deliver posts one event to the table's queue and counts it on the entry's
// counting event, as the entry's options say; fail overrides a successful outcome.
func (ni *NI) deliver(t *pt, ev *me.Event, fail eq.NIFail, hint *entry) {
	// The hint is the entry the message matched, taken from entries under the
	// same hold of mu (or already gone from them): a handle names one entry, so
	// it spares the lookup.
	e := hint
	if e == nil || e.h != ev.Handle {
		e = t.entries[ev.Handle]
	}
	switch ev.Fail {
	case me.FailNoMatch:
		fail = eq.NINoMatch
	case me.FailPTDisabled:
		fail = eq.NIPTDisabled
	}
	if ev.CT && e != nil && e.ct != nil {
		e.ct.count(fail == eq.NIOK, ev.CTInc)
	}
	if (ev.Post || (fail != eq.NIOK && ev.PostFail)) && t.eq != nil {
		h := &ev.Header
		out := eq.Event{Start: ev.LocalOffset, UserPtr: ev.UserPtr, DataUserPtr: ev.DataUserPtr,
			Addr: t.dataAddr(ev, e), HdrData: h.HdrData, MatchBits: h.MatchBits,
			RLength: h.Length, MLength: ev.MLength, RemoteOffset: h.RemoteOffset, UID: uint32(h.UID),
			PTIndex: uint32(t.idx), Type: meKinds[ev.Kind], List: ev.List, NIFail: fail,
			AtomicOp: eq.AtomicOp(h.AtomicOp), AtomicType: eq.AtomicType(h.AtomicType)}
		if ni.Logical() {
			out.Initiator.Rank = h.Initiator.Rank
		} else {
			out.Initiator.NID, out.Initiator.PID = h.Initiator.NID, h.Initiator.PID
		}
		t.eq.q.Post(&out)
	}
	switch ev.Kind {
	case me.EventAutoFree:
		if e != nil {
			e.release()
			delete(t.entries, ev.Handle)
		}
	case me.EventAutoUnlink:
		if e != nil && e.onUnlink != nil {
			e.onUnlink()
		}
		if e != nil && ev.List == me.ListPriority {
			// An overflow entry stays until AUTO_FREE: unexpected headers refer to its data.
			delete(t.entries, ev.Handle)
			ni.directUnlinked(t) // the entry behind it may take direct access (direct_window.go)
		}
	}
}

// dataAddr is the address of the first byte of ev's data in the memory of the entry
// that holds it (the overflow entry for overflow and search events), or zero.
func (t *pt) dataAddr(ev *me.Event, matched *entry) uintptr {
	if ev.MLength == 0 {
		return 0
	}
	d := t.entries[ev.DataHandle]
	if d == nil && matched != nil && matched.h == ev.DataHandle {
		d = matched
	}
	if d == nil {
		return 0
	}
	a, _ := d.mem.Addr(ev.LocalOffset)
	return a
}
