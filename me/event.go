package me

// EventKind is the kind of target-side event a me operation asks the engine to post.
type EventKind uint8

// The event kinds me produces (the engine maps them to PTL_EVENT_* records).
const (
	// EventPut reports a put delivered to an entry (PTL_EVENT_PUT).
	EventPut EventKind = iota + 1
	// EventGet reports a get served by an entry (PTL_EVENT_GET).
	EventGet
	// EventAtomic reports a non-fetching atomic (PTL_EVENT_ATOMIC).
	EventAtomic
	// EventFetchAtomic reports a fetching atomic or swap (PTL_EVENT_FETCH_ATOMIC).
	EventFetchAtomic
	// EventPutOverflow reports that an appended or searching entry found a put that had
	// been delivered to the overflow list (PTL_EVENT_PUT_OVERFLOW).
	EventPutOverflow
	// EventGetOverflow is EventPutOverflow for a get (PTL_EVENT_GET_OVERFLOW).
	EventGetOverflow
	// EventAtomicOverflow is EventPutOverflow for an atomic (PTL_EVENT_ATOMIC_OVERFLOW).
	EventAtomicOverflow
	// EventFetchAtomicOverflow is EventPutOverflow for a fetching atomic or swap
	// (PTL_EVENT_FETCH_ATOMIC_OVERFLOW).
	EventFetchAtomicOverflow
	// EventAutoUnlink reports that an entry unlinked itself (use-once or min_free)
	// (PTL_EVENT_AUTO_UNLINK).
	EventAutoUnlink
	// EventAutoFree reports that an auto-unlinked overflow-list entry is no longer
	// referenced by any unexpected header: its buffer may be reused (PTL_EVENT_AUTO_FREE).
	EventAutoFree
	// EventSearch reports the result of a search-only probe, or a search that found
	// nothing (PTL_EVENT_SEARCH; Fail tells which).
	EventSearch
	// EventLink reports that an appended entry was linked into its list (PTL_EVENT_LINK).
	EventLink
	// EventPTDisabled reports that flow control disabled the portal table entry
	// (PTL_EVENT_PT_DISABLED).
	EventPTDisabled
)

var eventNames = [...]string{
	EventPut: "PUT", EventGet: "GET", EventAtomic: "ATOMIC", EventFetchAtomic: "FETCH_ATOMIC",
	EventPutOverflow: "PUT_OVERFLOW", EventGetOverflow: "GET_OVERFLOW",
	EventAtomicOverflow: "ATOMIC_OVERFLOW", EventFetchAtomicOverflow: "FETCH_ATOMIC_OVERFLOW",
	EventAutoUnlink: "AUTO_UNLINK", EventAutoFree: "AUTO_FREE", EventSearch: "SEARCH",
	EventLink: "LINK", EventPTDisabled: "PT_DISABLED",
}

// String returns the Portals name of the event kind without the PTL_EVENT_ prefix.
func (k EventKind) String() string {
	if int(k) < len(eventNames) && eventNames[k] != "" {
		return eventNames[k]
	}
	return "invalid-event"
}

// commEvent returns the communication event kind of an operation.
func commEvent(o Op) EventKind {
	switch o {
	case OpKindPut:
		return EventPut
	case OpKindGet:
		return EventGet
	case OpKindAtomic:
		return EventAtomic
	}
	return EventFetchAtomic
}

// overflowEvent returns the overflow event kind of an operation.
func overflowEvent(o Op) EventKind {
	switch o {
	case OpKindPut:
		return EventPutOverflow
	case OpKindGet:
		return EventGetOverflow
	case OpKindAtomic:
		return EventAtomicOverflow
	}
	return EventFetchAtomicOverflow
}

// Fail is the ni_fail_type of an event.
type Fail uint8

const (
	// FailNone is PTL_NI_OK.
	FailNone Fail = iota
	// FailNoMatch is PTL_NI_NO_MATCH: a search found nothing.
	FailNoMatch
	// FailPTDisabled is PTL_NI_PT_DISABLED: flow control disabled the portal table entry.
	FailPTDisabled
)

// String returns the Portals name of the failure type without the PTL_NI_ prefix.
func (f Fail) String() string {
	switch f {
	case FailNone:
		return "OK"
	case FailNoMatch:
		return "NO_MATCH"
	case FailPTDisabled:
		return "PT_DISABLED"
	}
	return "invalid-fail"
}

// Event is one event a me operation asks the engine to produce. Every state change that
// the engine may need to act on is reported, including events the entry's options
// suppress: Post says whether a full event goes to the portal table's event queue
// (PostFail: whether it goes there when the engine reports the operation failed), CT
// says whether the entry's counting event (if it has one) is incremented, and by CTInc.
//
// Field meaning by kind:
//   - communication events (PUT, GET, ATOMIC, FETCH_ATOMIC): Handle/UserPtr/List name the
//     matched entry; Header is the message; LocalOffset/MLength say where in that entry's
//     buffer the data lands (start = entry start + LocalOffset).
//   - overflow events (*_OVERFLOW) and a successful SEARCH: Handle/UserPtr name the
//     appending or searching entry (Handle is zero for a search); Header is the unexpected
//     message; DataHandle/DataUserPtr name the overflow-list entry that holds its data,
//     at LocalOffset for MLength bytes; List is ListOverflow.
//   - AUTO_UNLINK, AUTO_FREE, LINK: Handle/UserPtr/List name the entry.
//   - SEARCH with FailNoMatch: only UserPtr is meaningful.
//   - PT_DISABLED: Handle/UserPtr name the entry whose resources ran out; Header is the
//     message that was refused.
type Event struct {
	Kind        EventKind
	Fail        Fail
	List        List
	Post        bool // post a full event to the portal table's event queue
	PostFail    bool // post it anyway if the operation fails (success events disabled)
	CT          bool // increment the entry's counting event (success) by CTInc
	Handle      Handle
	UserPtr     uint64
	DataHandle  Handle
	DataUserPtr uint64
	LocalOffset uint64
	MLength     uint64
	CTInc       uint64
	Header      Header
}

// ctAmount returns the counting increment for an event of mlength bytes.
func ctAmount(o Options, mlength uint64) uint64 {
	if o&EventCTBytes != 0 {
		return mlength
	}
	return 1
}
