package me

import "github.com/goportals/goportals/eq"

// Outcome says what became of an incoming message.
type Outcome uint8

const (
	// OutcomeMatched: an entry took the message; MatchResult says where.
	OutcomeMatched Outcome = iota + 1
	// OutcomeNoMatch: no entry of either list accepts the message. The engine drops it
	// (PTL_NI_DROPPED) or, on a flow-controlled portal table entry, disables the entry
	// and posts PT_DISABLED (PTL_NI_PT_DISABLED). Nothing changed.
	OutcomeNoMatch
	// OutcomePermViolation: the first accepting entry does not admit the message's uid
	// (PTL_NI_PERM_VIOLATION). The message is dropped; nothing changed.
	OutcomePermViolation
	// OutcomeOpViolation: the first accepting entry does not allow the operation
	// (PTL_NI_OP_VIOLATION). The message is dropped; nothing changed.
	OutcomeOpViolation
	// OutcomeUnexpectedFull: the message matched an overflow-list entry but the
	// unexpected-header list is full: a resource exhaustion. On a flow-controlled portal
	// table entry the engine disables it and posts the returned PT_DISABLED event (its
	// Post reflects the entry's EventFlowCtrlDisable); otherwise it drops the message.
	// Nothing changed.
	OutcomeUnexpectedFull
	// OutcomeInvalidHeader: the header's operation kind is undefined. The engine drops
	// and counts the message; nothing changed.
	OutcomeInvalidHeader
)

// String returns the outcome's name.
func (o Outcome) String() string {
	switch o {
	case OutcomeMatched:
		return "matched"
	case OutcomeNoMatch:
		return "no-match"
	case OutcomePermViolation:
		return "perm-violation"
	case OutcomeOpViolation:
		return "op-violation"
	case OutcomeUnexpectedFull:
		return "unexpected-full"
	case OutcomeInvalidHeader:
		return "invalid-header"
	}
	return "invalid-outcome"
}

// MatchResult says which entry took a message and where the data goes. Fields other than
// Outcome are set for OutcomeMatched; Handle, UserPtr and List also name the refusing
// entry for the violation outcomes and OutcomeUnexpectedFull.
type MatchResult struct {
	Outcome Outcome
	// List is the list of the entry.
	List List
	// Handle and UserPtr name the entry. After an auto-unlink the handle is stale for the
	// table but still identifies the entry to the engine.
	Handle  Handle
	UserPtr uint64
	// LocalOffset is where in the entry's buffer the operation starts.
	LocalOffset uint64
	// MLength is the number of bytes the operation moves (rlength truncated to the room
	// left at LocalOffset, and to MaxMsgSize/MaxAtomicSize).
	MLength uint64
	// AckDisabled is set when the entry has AckDisable: no acknowledgment is sent for a put
	// or atomic even if one was requested (gets are answered by their reply anyway).
	AckDisabled bool
	// Unlinked is set when this match auto-unlinked the entry (use-once or min_free).
	Unlinked bool
	// HeaderKept is set when the message was recorded as an unexpected header;
	// Unexpected then names that header (see Table.SetBusy).
	HeaderKept bool
	Unexpected UnexpectedID
}

// accepts reports whether an entry with criteria c and local offset accepts the message
// h: source, match bits, and the no-truncate fit. Permissions are checked after the
// accepting entry is found.
func (t *Table) accepts(c *criteria, offset uint64, h *Header) bool {
	if (h.MatchBits^c.matchBits)&^c.ignoreBits != 0 {
		return false
	}
	if !acceptsSource(t.cfg.Addressing, c.matchID, h.Initiator) {
		return false
	}
	if c.options&NoTruncate != 0 {
		off := h.RemoteOffset
		if c.options&ManageLocal != 0 {
			off = offset
		}
		if off > c.length || h.Length > c.length-off {
			return false
		}
	}
	return true
}

// find returns the first entry of list l in list order that accepts h, or nilIdx.
func (t *Table) find(l *matchList, h *Header) int32 {
	if !t.cfg.Matching {
		return l.wild.head
	}
	best := nilIdx
	var bestSeq uint64
	if b := l.bins.lookup(h.MatchBits); b != nil {
		for i := b.head; i != nilIdx; {
			e := &t.ar.e[i]
			if t.accepts(&e.criteria, e.offset, h) {
				best, bestSeq = i, e.seq
				break
			}
			i = e.next
		}
	}
	for i := l.wild.head; i != nilIdx; {
		e := &t.ar.e[i]
		if best != nilIdx && e.seq > bestSeq {
			break
		}
		if t.accepts(&e.criteria, e.offset, h) {
			return i
		}
		i = e.next
	}
	return best
}

// Match delivers an incoming message: the first accepting entry of the priority list,
// else of the overflow list, takes it, if permissions allow. The events the delivery
// produces are appended to out (pass out[:0] of a reused slice: the call then allocates
// nothing once the table has reached its working size). In order:
//
//   - AUTO_UNLINK when the entry unlinks itself (UseOnce, or ManageLocal with MinFree and
//     less than MinFree bytes left), posted unless EventUnlinkDisable. In the reference
//     implementation it precedes the communication event, which the engine posts when
//     the data movement completes.
//   - the communication event (PUT, GET, ATOMIC or FETCH_ATOMIC), posted unless
//     EventCommDisable or EventSuccessDisable, counted with EventCTComm (CTInc is 1, or
//     MLength with EventCTBytes).
//   - AUTO_FREE when an overflow-list entry unlinked itself and no unexpected header refers
//     to it (possible only with UnexpectedHdrDisable), posted unless EventUnlinkDisable.
//
// A message delivered to an overflow-list entry is also recorded as an unexpected header
// (unless the entry has UnexpectedHdrDisable), to be claimed by a later priority-list
// Append or by Search. For OutcomeUnexpectedFull the only event is PT_DISABLED, posted
// unless the entry has EventFlowCtrlDisable. The other failure outcomes produce no event.
func (t *Table) Match(h *Header, out []Event) (MatchResult, []Event) {
	if !h.Op.valid() {
		return MatchResult{Outcome: OutcomeInvalidHeader}, out
	}
	l := ListPriority
	i := t.find(&t.lists[ListPriority], h)
	if i == nilIdx {
		l = ListOverflow
		i = t.find(&t.lists[ListOverflow], h)
		if i == nilIdx {
			return MatchResult{Outcome: OutcomeNoMatch}, out
		}
	}
	e := &t.ar.e[i]
	opts := e.options
	res := MatchResult{
		Outcome: permitted(e.uid, opts, h),
		List:    l,
		Handle:  makeHandle(i, e.gen),
		UserPtr: e.userPtr,
	}
	if res.Outcome != OutcomeMatched {
		return res, out
	}
	keep := l == ListOverflow && opts&UnexpectedHdrDisable == 0
	if keep && t.ux.n >= t.cfg.MaxUnexpectedHeaders {
		res.Outcome = OutcomeUnexpectedFull
		out = append(out, Event{
			Kind:    EventPTDisabled,
			Fail:    FailPTDisabled,
			List:    l,
			Post:    opts&EventFlowCtrlDisable == 0,
			Handle:  res.Handle,
			UserPtr: res.UserPtr,
			Header:  *h,
		})
		return res, out
	}

	// Offset and length (truncation rules).
	off := h.RemoteOffset
	if opts&ManageLocal != 0 {
		off = e.offset
	}
	var mlen uint64
	if off <= e.length {
		mlen = min(h.Length, e.length-off)
	}
	if limit := t.limit(h.Op); limit != 0 && mlen > limit {
		mlen = limit
	}
	if h.Op.isAtomic() {
		// An atomic applies whole elements only, and reports what it applied.
		if sz := uint64(eq.AtomicType(h.AtomicType).Size()); sz > 0 {
			mlen -= mlen % sz
		}
	}
	res.LocalOffset, res.MLength = off, mlen
	res.AckDisabled = opts&AckDisable != 0
	if opts&ManageLocal != 0 {
		e.offset += mlen
	}
	unlink := opts&UseOnce != 0 ||
		(opts&ManageLocal != 0 && e.minFree != 0 && e.length-e.offset < e.minFree)
	if unlink {
		res.Unlinked = true
		out = append(out, Event{})
		ev := &out[len(out)-1]
		ev.Kind = EventAutoUnlink
		ev.List = l
		ev.Post = opts&EventUnlinkDisable == 0
		ev.Handle = res.Handle
		ev.UserPtr = res.UserPtr
	}
	out = append(out, Event{})
	ev := &out[len(out)-1]
	ev.Kind = commEvent(h.Op)
	ev.List = l
	ev.Post = opts&(EventCommDisable|EventSuccessDisable) == 0
	ev.PostFail = opts&EventCommDisable == 0
	ev.Handle, ev.DataHandle = res.Handle, res.Handle
	ev.UserPtr, ev.DataUserPtr = res.UserPtr, res.UserPtr
	ev.LocalOffset = off
	ev.MLength = mlen
	ev.Header = *h
	if opts&EventCTComm != 0 {
		ev.CT, ev.CTInc = true, ctAmount(opts, mlen)
	}
	if keep {
		res.Unexpected = t.addUnexpected(h, i, off, mlen)
		res.HeaderKept = true
	}
	if unlink {
		t.unlinkEntry(i)
		if e.pending > 0 {
			e.state = stateDetached
		} else if l == ListOverflow {
			out = t.autoFree(i, out)
		} else {
			t.ar.release(i)
		}
	}
	return res, out
}

// limit returns the length cap for an operation kind (0: none).
func (t *Table) limit(o Op) uint64 {
	if o.isAtomic() {
		return t.cfg.MaxAtomicSize
	}
	return t.cfg.MaxMsgSize
}
