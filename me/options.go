package me

// Options is the option set of a match entry (ME) or list entry (LE). The bit values
// equal those of portals4.h, so options cross a C boundary unchanged; bit 0 is the C
// API's PTL_IOVEC, which Go expresses by the entry's Iovecs field instead.
type Options uint32

// The entry options.
const (
	// OpPut lets put and atomic operations use the entry (PTL_ME_OP_PUT). Without it
	// they are an operation violation.
	OpPut Options = 1 << (iota + 1)
	// OpGet lets get operations use the entry (PTL_ME_OP_GET). Fetching atomics and
	// swaps need both OpPut and OpGet.
	OpGet
	// UseOnce unlinks the entry after its first use (PTL_ME_USE_ONCE).
	UseOnce
	// AckDisable suppresses the acknowledgment of puts and atomics that asked for one
	// (PTL_ME_ACK_DISABLE). me reports it in MatchResult.AckDisabled; the engine obeys.
	AckDisable
	// UnexpectedHdrDisable keeps a message delivered to this overflow-list entry out of
	// the unexpected-header list (PTL_ME_UNEXPECTED_HDR_DISABLE). Meaningless on the
	// priority list.
	UnexpectedHdrDisable
	// IsAccessible declares that the entry's memory is accessible to the application
	// (PTL_ME_IS_ACCESSIBLE). me records it (see State); the engine uses it to decide how
	// the buffer is bound. It does not change matching.
	IsAccessible
	// EventLinkDisable suppresses the PTL_EVENT_LINK event (PTL_ME_EVENT_LINK_DISABLE).
	EventLinkDisable
	// EventCommDisable suppresses communication events (PUT, GET, ATOMIC, FETCH_ATOMIC)
	// and SEARCH events (PTL_ME_EVENT_COMM_DISABLE).
	EventCommDisable
	// EventFlowCtrlDisable suppresses the PT_DISABLED event a flow-control failure caused
	// by this entry would post (PTL_ME_EVENT_FLOWCTRL_DISABLE).
	EventFlowCtrlDisable
	// EventSuccessDisable suppresses events that report success (PTL_ME_EVENT_SUCCESS_DISABLE).
	EventSuccessDisable
	// EventOverDisable suppresses the *_OVERFLOW events (PTL_ME_EVENT_OVER_DISABLE).
	EventOverDisable
	// EventUnlinkDisable suppresses AUTO_UNLINK and AUTO_FREE (PTL_ME_EVENT_UNLINK_DISABLE).
	EventUnlinkDisable
	// EventCTComm counts communication events on the entry's counting event
	// (PTL_ME_EVENT_CT_COMM).
	EventCTComm
	// EventCTOverflow counts overflow events on the entry's counting event
	// (PTL_ME_EVENT_CT_OVERFLOW).
	EventCTOverflow
	// EventCTBytes counts mlength bytes instead of one per event (PTL_ME_EVENT_CT_BYTES).
	EventCTBytes
	// ManageLocal makes the entry keep its own offset, advanced by each operation's
	// mlength, instead of using the remote offset of the message (PTL_ME_MANAGE_LOCAL).
	// Match entries only.
	ManageLocal
	// NoTruncate makes a message that does not fit at the entry's offset fail to match
	// this entry; matching then goes on with the next entry (PTL_ME_NO_TRUNCATE).
	// Match entries only.
	NoTruncate
	// MayAlign allows the implementation to align locally managed deposits
	// (PTL_ME_MAY_ALIGN). It is a placement hint that the specification lets an
	// implementation decline: me accepts it and places data exactly at the local offset.
	// Match entries only.
	MayAlign

	lastOption
)

// leOptions are the options valid on a list entry (the non-matching form).
const leOptions = OpPut | OpGet | UseOnce | AckDisable | UnexpectedHdrDisable | IsAccessible |
	EventLinkDisable | EventCommDisable | EventFlowCtrlDisable | EventSuccessDisable |
	EventOverDisable | EventUnlinkDisable | EventCTComm | EventCTOverflow | EventCTBytes

// meOptions are the options valid on a match entry.
const meOptions = leOptions | ManageLocal | NoTruncate | MayAlign

// allOptions is every defined option bit (bit 0, the C API's PTL_IOVEC, is not one).
const allOptions = lastOption - 2

var optionNames = [...]string{
	"OpPut", "OpGet", "UseOnce", "AckDisable", "UnexpectedHdrDisable", "IsAccessible",
	"EventLinkDisable", "EventCommDisable", "EventFlowCtrlDisable", "EventSuccessDisable",
	"EventOverDisable", "EventUnlinkDisable", "EventCTComm", "EventCTOverflow",
	"EventCTBytes", "ManageLocal", "NoTruncate", "MayAlign",
}

// Has reports whether every option in x is set in o.
func (o Options) Has(x Options) bool { return o&x == x }

// String lists the set options joined by '|', and any undefined bits in hex.
func (o Options) String() string {
	if o == 0 {
		return "0"
	}
	s := ""
	for i, name := range optionNames {
		if o&(2<<i) != 0 {
			if s != "" {
				s += "|"
			}
			s += name
		}
	}
	if rest := o &^ allOptions; rest != 0 {
		if s != "" {
			s += "|"
		}
		s += "0x" + hex(uint64(rest))
	}
	return s
}

func hex(v uint64) string {
	const digits = "0123456789abcdef"
	if v == 0 {
		return "0"
	}
	var b [16]byte
	i := len(b)
	for v != 0 {
		i--
		b[i] = digits[v&15]
		v >>= 4
	}
	return string(b[i:])
}
