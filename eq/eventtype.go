package eq

// EventKind is the type of an event (ptl_event_kind_t). The values follow the order of
// portals4.h of the Portals 4 reference implementation.
type EventKind uint8

// Event kinds, as in portals4.h.
const (
	EventGet                 EventKind = iota // a get was served from an entry (target)
	EventGetOverflow                          // an appended entry matched a get kept in the unexpected list
	EventPut                                  // a put landed in an entry (target)
	EventPutOverflow                          // an appended entry matched a put kept in the unexpected list
	EventAtomic                               // an atomic was applied (target)
	EventAtomicOverflow                       // an appended entry matched an atomic kept in the unexpected list
	EventFetchAtomic                          // a fetching atomic was applied (target)
	EventFetchAtomicOverflow                  // an appended entry matched a fetching atomic kept in the unexpected list
	EventReply                                // the reply of a get or fetching atomic arrived (initiator)
	EventSend                                 // the initiator's buffer may be reused (initiator)
	EventAck                                  // an acknowledgment arrived (initiator)
	EventPTDisabled                           // flow control disabled the portal table entry
	EventLink                                 // an entry was linked into a list
	EventAutoUnlink                           // an entry was unlinked automatically
	EventAutoFree                             // an unlinked overflow entry has no unexpected header left
	EventSearch                               // a search of the unexpected list completed
)

// NumEventKinds is the number of defined event kinds.
const NumEventKinds = int(EventSearch) + 1

var eventKindNames = []string{
	"PTL_EVENT_GET", "PTL_EVENT_GET_OVERFLOW", "PTL_EVENT_PUT", "PTL_EVENT_PUT_OVERFLOW",
	"PTL_EVENT_ATOMIC", "PTL_EVENT_ATOMIC_OVERFLOW", "PTL_EVENT_FETCH_ATOMIC",
	"PTL_EVENT_FETCH_ATOMIC_OVERFLOW", "PTL_EVENT_REPLY", "PTL_EVENT_SEND", "PTL_EVENT_ACK",
	"PTL_EVENT_PT_DISABLED", "PTL_EVENT_LINK", "PTL_EVENT_AUTO_UNLINK", "PTL_EVENT_AUTO_FREE",
	"PTL_EVENT_SEARCH",
}

// String returns the portals4.h identifier, e.g. "PTL_EVENT_PUT".
func (k EventKind) String() string { return enumName(eventKindNames, int(k), "EventKind") }

// Valid reports whether k is a defined event kind.
func (k EventKind) Valid() bool { return int(k) < NumEventKinds }

// ParseEventKind accepts "PTL_EVENT_PUT" or "PUT" (any case).
func ParseEventKind(s string) (EventKind, error) {
	v, err := parseEnum(s, eventKindNames, "PTL_EVENT_", "", nil, "event kind")
	return EventKind(v), err
}

// Overflow returns the *_OVERFLOW kind that reports an operation of kind k found in the
// unexpected list (GET, PUT, ATOMIC, FETCH_ATOMIC), and false for other kinds.
func (k EventKind) Overflow() (EventKind, bool) {
	switch k {
	case EventGet, EventPut, EventAtomic, EventFetchAtomic:
		return k + 1, true
	}
	return k, false
}

// IsOverflow reports whether k is one of the *_OVERFLOW kinds.
func (k EventKind) IsOverflow() bool {
	switch k {
	case EventGetOverflow, EventPutOverflow, EventAtomicOverflow, EventFetchAtomicOverflow:
		return true
	}
	return false
}

// IsInitiator reports whether k is delivered at the initiator (SEND, ACK, REPLY); the
// other kinds are delivered at the target.
func (k EventKind) IsInitiator() bool {
	return k == EventSend || k == EventAck || k == EventReply
}

// List names the list of a portal table entry an event's entry belongs to (ptl_list_t).
type List uint8

// Lists, as in portals4.h.
const (
	PriorityList List = iota // PTL_PRIORITY_LIST
	OverflowList             // PTL_OVERFLOW_LIST
)

var listNames = []string{"PTL_PRIORITY_LIST", "PTL_OVERFLOW_LIST"}

// String returns the portals4.h identifier, e.g. "PTL_PRIORITY_LIST".
func (l List) String() string { return enumName(listNames, int(l), "List") }

// Valid reports whether l is a defined list.
func (l List) Valid() bool { return int(l) < len(listNames) }

// ParseList accepts "PTL_PRIORITY_LIST", "PRIORITY_LIST" or "PRIORITY" (any case).
func ParseList(s string) (List, error) {
	v, err := parseEnum(s, listNames, "PTL_", "_LIST", map[string]int{
		"PRIORITY_LIST": int(PriorityList), "OVERFLOW_LIST": int(OverflowList),
	}, "list")
	return List(v), err
}

// NIFail tells how an operation failed (ptl_ni_fail_t); NIOK is success.
type NIFail uint8

// NI failure types, with the numeric values of portals4.h; NITargetInvalid is
// goportals' own, after the last of them.
const (
	NIOK            NIFail = iota // PTL_NI_OK: no failure
	NIUndeliverable               // PTL_NI_UNDELIVERABLE: a system failure prevented delivery (peer gone)
	NIDropped                     // PTL_NI_DROPPED: the message was dropped (no matching entry, no room)
	NIPTDisabled                  // PTL_NI_PT_DISABLED: the target's portal table entry is disabled
	NIPermViolation               // PTL_NI_PERM_VIOLATION: the target refused the initiator's uid
	NIOpViolation                 // PTL_NI_OP_VIOLATION: the matched entry does not allow the operation
	NINoMatch                     // PTL_NI_NO_MATCH: a search found no entry in the unexpected list
	NISegv                        // PTL_NI_SEGV: the operation addressed memory outside a region
	NITargetInvalid               // the target process or portal index does not exist
)

// NumNIFails is the number of defined NI failure types.
const NumNIFails = int(NITargetInvalid) + 1

var niFailNames = []string{
	"PTL_NI_OK", "PTL_NI_UNDELIVERABLE", "PTL_NI_DROPPED", "PTL_NI_PT_DISABLED",
	"PTL_NI_PERM_VIOLATION", "PTL_NI_OP_VIOLATION", "PTL_NI_NO_MATCH", "PTL_NI_SEGV",
	"PTL_NI_TARGET_INVALID",
}

// String returns the portals4.h identifier, e.g. "PTL_NI_OK".
func (f NIFail) String() string { return enumName(niFailNames, int(f), "NIFail") }

// Valid reports whether f is a defined failure type.
func (f NIFail) Valid() bool { return int(f) < NumNIFails }

// ParseNIFail accepts "PTL_NI_DROPPED" or "DROPPED" (any case).
func ParseNIFail(s string) (NIFail, error) {
	v, err := parseEnum(s, niFailNames, "PTL_NI_", "", nil, "ni_fail type")
	return NIFail(v), err
}
