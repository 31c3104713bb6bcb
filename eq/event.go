package eq

import "unsafe"

// Event is one Portals 4 event (ptl_event_t). It holds no pointers (Addr is an address,
// not a reference), so posting copies it into the ring without allocation and the
// garbage collector never scans the ring.
type Event struct {
	// Start is the byte offset, within the memory region of the entry or memory
	// descriptor the event refers to, where the operation's data begins (Portals' start
	// is that region's start address plus this offset). For *_OVERFLOW events it locates
	// the message inside the overflow entry's region. The public API turns it into a
	// slice of the region.
	Start uint64
	// Addr is the address of the first byte of the operation's data in local memory
	// (Portals' start as an address), or zero when no data moved. For *_OVERFLOW and
	// SEARCH events it points into the overflow entry that holds the data, which
	// DataUserPtr names; DataIn turns it into a slice of the application's buffer.
	Addr uintptr
	// DataUserPtr is the user pointer of the entry whose memory holds the data: the
	// matched entry for communication events, the overflow-list entry the message was
	// delivered into for *_OVERFLOW and SEARCH events.
	DataUserPtr uint64
	// UserPtr is the user's cookie given with the entry or operation (Portals'
	// user_ptr). The public API maps it back to the user's value.
	UserPtr uint64
	// HdrData is the 64 bits of out-of-band data the initiator sent.
	HdrData uint64
	// MatchBits are the match bits the initiator sent.
	MatchBits uint64
	// RLength is the length the initiator requested.
	RLength uint64
	// MLength is the length actually manipulated (shorter when truncated).
	MLength uint64
	// RemoteOffset is, at the target, the offset the initiator requested; at the
	// initiator, the offset used at the target.
	RemoteOffset uint64
	// Initiator identifies the process that started the operation.
	Initiator ProcessID
	// UID is the user identifier of the initiator.
	UID uint32
	// PTIndex is the portal table index the message arrived on.
	PTIndex uint32
	// Type is the kind of event.
	Type EventKind
	// List is the list of the entry the message matched (priority or overflow).
	List List
	// NIFail is NIOK on success, or how the operation failed.
	NIFail NIFail
	// AtomicOp is the operation of an atomic event.
	AtomicOp AtomicOp
	// AtomicType is the datatype of an atomic event.
	AtomicType AtomicType
}

// DataIn returns the part of buf that holds the event's data (MLength bytes at Addr),
// and true, when that range lies inside buf; nil and false otherwise. buf is the memory
// of the entry DataUserPtr names (or one of the application's candidate buffers).
func (e *Event) DataIn(buf []byte) ([]byte, bool) {
	if e.Addr == 0 || len(buf) == 0 {
		return nil, false
	}
	base := uintptr(unsafe.Pointer(unsafe.SliceData(buf)))
	if e.Addr < base || e.Addr-base > uintptr(len(buf)) || uint64(uintptr(len(buf))-(e.Addr-base)) < e.MLength {
		return nil, false
	}
	off := e.Addr - base
	return buf[off : off+uintptr(e.MLength) : off+uintptr(e.MLength)], true
}
