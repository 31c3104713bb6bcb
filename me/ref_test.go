package me

import "github.com/goportals/goportals/eq"

// A plain linear model of the me semantics, written independently of the hashed table:
// entries in slices in list order, the unexpected list as a slice, every rule spelled out
// again. FuzzMatchEquivalence drives both with the same operations. Entry handles are
// replaced by the entry's id (its UserPtr) in everything the model returns.

type refEntry struct {
	id       uint64
	spec     Entry
	list     List
	offset   uint64
	pending  int
	detached bool
	linked   bool
}

type refHdr struct {
	hdr     Header
	data    *refEntry
	offset  uint64
	mlength uint64
}

type refModel struct {
	cfg   Config
	lists [2][]*refEntry
	ux    []*refHdr
	byID  map[uint64]*refEntry // every entry still held (linked or detached)
}

func newRefModel(cfg Config) *refModel {
	return &refModel{cfg: cfg, byID: map[uint64]*refEntry{}}
}

func (m *refModel) srcOK(want, src ProcessID) bool {
	if m.cfg.Addressing == Logical {
		return want.Rank == src.Rank || want.Rank == RankAny
	}
	return (want.NID == src.NID || want.NID == NIDAny) && (want.PID == src.PID || want.PID == PIDAny)
}

// matches is check_match of the reference implementation.
func (m *refModel) matches(spec Entry, offset uint64, h Header) bool {
	if !m.cfg.Matching {
		return true
	}
	if !m.srcOK(spec.MatchID, h.Initiator) {
		return false
	}
	off := h.RemoteOffset
	if spec.Options&ManageLocal != 0 {
		off = offset
	}
	if spec.Options&NoTruncate != 0 && off+h.Length > spec.Length {
		return false
	}
	return h.MatchBits|spec.IgnoreBits == spec.MatchBits|spec.IgnoreBits
}

func refPerm(spec Entry, h Header) Outcome {
	if !(spec.UID == UIDAny || spec.UID == h.UID) {
		return OutcomePermViolation
	}
	put, get := spec.Options&OpPut != 0, spec.Options&OpGet != 0
	switch h.Op {
	case OpKindPut, OpKindAtomic:
		if !put {
			return OutcomeOpViolation
		}
	case OpKindGet:
		if !get {
			return OutcomeOpViolation
		}
	default:
		if !put || !get {
			return OutcomeOpViolation
		}
	}
	return OutcomeMatched
}

func (m *refModel) optionsOK(o Options) bool {
	if m.cfg.Matching {
		return o&^allOptions == 0
	}
	return o&^allOptions == 0 && o&(ManageLocal|NoTruncate|MayAlign) == 0
}

func (m *refModel) dropHeader(k int, out []Event) []Event {
	r := m.ux[k]
	m.ux = append(m.ux[:k:k], m.ux[k+1:]...)
	d := r.data
	d.pending--
	if d.pending == 0 && d.detached {
		out = append(out, Event{Kind: EventAutoFree, List: ListOverflow,
			Post: d.spec.Options&EventUnlinkDisable == 0, Handle: Handle(d.id), UserPtr: d.id})
		delete(m.byID, d.id)
	}
	return out
}

func (m *refModel) hdrEvent(kind EventKind, r *refHdr, userPtr uint64, h Handle) Event {
	return Event{Kind: kind, List: ListOverflow, Handle: h, UserPtr: userPtr,
		DataHandle: Handle(r.data.id), DataUserPtr: r.data.id,
		LocalOffset: r.offset, MLength: r.mlength, Header: r.hdr}
}

func refOverflowKind(o Op) EventKind {
	return map[Op]EventKind{OpKindPut: EventPutOverflow, OpKindGet: EventGetOverflow,
		OpKindAtomic: EventAtomicOverflow, OpKindFetchAtomic: EventFetchAtomicOverflow,
		OpKindSwap: EventFetchAtomicOverflow}[o]
}

func refCommKind(o Op) EventKind {
	return map[Op]EventKind{OpKindPut: EventPut, OpKindGet: EventGet,
		OpKindAtomic: EventAtomic, OpKindFetchAtomic: EventFetchAtomic,
		OpKindSwap: EventFetchAtomic}[o]
}

// append returns the error class (nil or a sentinel) and the events.
func (m *refModel) append(id uint64, spec Entry, l List) ([]Event, error) {
	if l != ListPriority && l != ListOverflow {
		return nil, ErrInvalidList
	}
	if !m.optionsOK(spec.Options) {
		return nil, ErrInvalidOption
	}
	if len(m.lists[l]) >= m.cfg.MaxListSize {
		return nil, ErrListTooLong
	}
	if len(m.byID) >= m.cfg.MaxEntries {
		return nil, ErrNoSpace
	}
	var out []Event
	if l == ListPriority {
		for k := 0; k < len(m.ux); {
			r := m.ux[k]
			if !m.matches(spec, 0, r.hdr) {
				k++
				continue
			}
			ev := m.hdrEvent(refOverflowKind(r.hdr.Op), r, id, Handle(id))
			ev.Post = spec.Options&EventOverDisable == 0
			if spec.Options&EventCTOverflow != 0 {
				ev.CT = true
				ev.CTInc = 1
				if spec.Options&EventCTBytes != 0 {
					ev.CTInc = r.mlength
				}
			}
			out = append(out, ev)
			out = m.dropHeader(k, out)
			if spec.Options&UseOnce != 0 {
				out = append(out, Event{Kind: EventAutoUnlink, List: ListPriority,
					Post: spec.Options&EventUnlinkDisable == 0, Handle: Handle(id), UserPtr: id})
				return out, nil
			}
		}
	}
	e := &refEntry{id: id, spec: spec, list: l, linked: true}
	m.lists[l] = append(m.lists[l], e)
	m.byID[id] = e
	out = append(out, Event{Kind: EventLink, List: l, Post: spec.Options&EventLinkDisable == 0,
		Handle: Handle(id), UserPtr: id})
	return out, nil
}

func (m *refModel) unlink(id uint64) error {
	e, ok := m.byID[id]
	if !ok {
		return ErrUnknownHandle
	}
	if e.pending > 0 {
		return ErrInUse
	}
	if e.linked {
		m.removeFromList(e)
	}
	delete(m.byID, id)
	return nil
}

func (m *refModel) removeFromList(e *refEntry) {
	l := m.lists[e.list]
	for k, x := range l {
		if x == e {
			m.lists[e.list] = append(l[:k:k], l[k+1:]...)
			break
		}
	}
	e.linked = false
}

func (m *refModel) match(h Header) (MatchResult, []Event) {
	if h.Op < OpKindPut || h.Op > OpKindSwap {
		return MatchResult{Outcome: OutcomeInvalidHeader}, nil
	}
	var e *refEntry
	for _, l := range []List{ListPriority, ListOverflow} {
		for _, x := range m.lists[l] {
			if m.matches(x.spec, x.offset, h) {
				e = x
				break
			}
		}
		if e != nil {
			break
		}
	}
	if e == nil {
		return MatchResult{Outcome: OutcomeNoMatch}, nil
	}
	o := e.spec.Options
	res := MatchResult{Outcome: refPerm(e.spec, h), List: e.list, Handle: Handle(e.id), UserPtr: e.id}
	if res.Outcome != OutcomeMatched {
		return res, nil
	}
	keep := e.list == ListOverflow && o&UnexpectedHdrDisable == 0
	if keep && len(m.ux) >= m.cfg.MaxUnexpectedHeaders {
		res.Outcome = OutcomeUnexpectedFull
		return res, []Event{{Kind: EventPTDisabled, Fail: FailPTDisabled, List: e.list,
			Post: o&EventFlowCtrlDisable == 0, Handle: Handle(e.id), UserPtr: e.id, Header: h}}
	}
	off := h.RemoteOffset
	if o&ManageLocal != 0 {
		off = e.offset
	}
	mlen := uint64(0)
	if off <= e.spec.Length {
		mlen = e.spec.Length - off
		if h.Length < mlen {
			mlen = h.Length
		}
	}
	limit := m.cfg.MaxMsgSize
	if h.Op != OpKindPut && h.Op != OpKindGet {
		limit = m.cfg.MaxAtomicSize
	}
	if limit > 0 && mlen > limit {
		mlen = limit
	}
	if h.Op != OpKindPut && h.Op != OpKindGet {
		// Whole elements of the datatype only.
		if sz := uint64(eq.AtomicType(h.AtomicType).Size()); sz > 0 {
			mlen = mlen / sz * sz
		}
	}
	res.LocalOffset, res.MLength, res.AckDisabled = off, mlen, o&AckDisable != 0
	if o&ManageLocal != 0 {
		e.offset += mlen
	}
	var out []Event
	unlink := o&UseOnce != 0 || (o&ManageLocal != 0 && e.spec.MinFree > 0 && e.spec.Length-e.offset < e.spec.MinFree)
	if unlink {
		res.Unlinked = true
		out = append(out, Event{Kind: EventAutoUnlink, List: e.list, Post: o&EventUnlinkDisable == 0,
			Handle: Handle(e.id), UserPtr: e.id})
	}
	ev := Event{Kind: refCommKind(h.Op), List: e.list,
		Post:     o&EventCommDisable == 0 && o&EventSuccessDisable == 0,
		PostFail: o&EventCommDisable == 0,
		Handle:   Handle(e.id), UserPtr: e.id, DataHandle: Handle(e.id), DataUserPtr: e.id,
		LocalOffset: off, MLength: mlen, Header: h}
	if o&EventCTComm != 0 {
		ev.CT, ev.CTInc = true, 1
		if o&EventCTBytes != 0 {
			ev.CTInc = mlen
		}
	}
	out = append(out, ev)
	if keep {
		m.ux = append(m.ux, &refHdr{hdr: h, data: e, offset: off, mlength: mlen})
		e.pending++
		res.HeaderKept = true
	}
	if unlink {
		m.removeFromList(e)
		switch {
		case e.pending > 0:
			e.detached = true
		case e.list == ListOverflow:
			out = append(out, Event{Kind: EventAutoFree, List: ListOverflow,
				Post: o&EventUnlinkDisable == 0, Handle: Handle(e.id), UserPtr: e.id})
			delete(m.byID, e.id)
		default:
			delete(m.byID, e.id)
		}
	}
	return res, out
}

func (m *refModel) search(spec Entry, op SearchOp) ([]Event, error) {
	if op != SearchOnly && op != SearchDelete {
		return nil, ErrInvalidSearchOp
	}
	if !m.optionsOK(spec.Options) {
		return nil, ErrInvalidOption
	}
	var out []Event
	found := false
	for k := 0; k < len(m.ux); {
		r := m.ux[k]
		// No permission check against unexpected headers, for either operation.
		if !m.matches(spec, 0, r.hdr) {
			k++
			continue
		}
		found = true
		if op == SearchOnly {
			ev := m.hdrEvent(EventSearch, r, spec.UserPtr, 0)
			ev.Post = spec.Options&EventCommDisable == 0
			out = append(out, ev)
			k++
		} else {
			ev := m.hdrEvent(refOverflowKind(r.hdr.Op), r, spec.UserPtr, 0)
			ev.Post = spec.Options&EventOverDisable == 0
			out = append(out, ev)
			out = m.dropHeader(k, out)
		}
		if spec.Options&UseOnce != 0 {
			break
		}
	}
	if !found {
		out = append(out, Event{Kind: EventSearch, Fail: FailNoMatch,
			Post: spec.Options&EventCommDisable == 0, UserPtr: spec.UserPtr})
	}
	return out, nil
}
