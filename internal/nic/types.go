package nic

import (
	"github.com/goportals/goportals/eq"
	"github.com/goportals/goportals/me"
)

// NID, PID, Rank and UID identify nodes, processes, logical ranks and users (the
// same types as in packages eq and me, so values compare across them).
type (
	NID  = eq.NID
	PID  = eq.PID
	Rank = eq.Rank
	UID  = eq.UID
)

// ProcessID names a process: NID and PID on a physically addressed NI, Rank on a
// logically addressed one (ptl_process_t). Event.Initiator has this type.
type ProcessID = eq.ProcessID

// Wildcards and special values (portals4.h's values).
const (
	NIDAny  = eq.NIDAny  // PTL_NID_ANY (0xffff)
	PIDAny  = eq.PIDAny  // PTL_PID_ANY (0xffff)
	RankAny = eq.RankAny // PTL_RANK_ANY
	UIDAny  = eq.UIDAny  // PTL_UID_ANY
)

// PTIndex is a portal table index.
type PTIndex uint32

// PTAny asks PTAlloc for any free index (PTL_PT_ANY).
const PTAny = PTIndex(^uint32(0))

// Interface selects a network interface; IfaceDefault is the only one (the
// provider's first device).
type Interface uint32

// IfaceDefault is PTL_IFACE_DEFAULT.
const IfaceDefault = Interface(^uint32(0))

// NIOptions are the options of NIInit: one of NIMatching/NINoMatching and one of
// NILogical/NIPhysical.
type NIOptions uint32

// NI options (PTL_NI_*).
const (
	NIMatching NIOptions = 1 << iota
	NINoMatching
	NILogical
	NIPhysical
)

// PTOptions are the options of PTAlloc.
type PTOptions uint32

// PT options (PTL_PT_*), with portals4.h's values.
const (
	PTOnlyUseOnce    PTOptions = 1 << 0 // PTL_PT_ONLY_USE_ONCE: a hint, entries are never refused for it
	PTFlowCtrl       PTOptions = 1 << 1 // PTL_PT_FLOWCTRL
	PTOnlyTruncate   PTOptions = 1 << 2 // PTL_PT_ONLY_TRUNCATE: a hint, entries are never refused for it
	PTMatchUnordered PTOptions = 1 << 3 // PTL_PT_MATCH_UNORDERED
)

// MDOptions are the options of a memory descriptor (PTL_MD_*).
type MDOptions uint32

// MD options, with portals4.h's values (bit 0 is the C API's PTL_IOVEC, which Go
// expresses by the descriptor's memory instead).
const (
	MDEventCTSend         MDOptions = 1 << 1  // PTL_MD_EVENT_CT_SEND
	MDEventCTReply        MDOptions = 1 << 2  // PTL_MD_EVENT_CT_REPLY
	MDEventCTAck          MDOptions = 1 << 3  // PTL_MD_EVENT_CT_ACK
	MDUnordered           MDOptions = 1 << 4  // PTL_MD_UNORDERED
	MDEventSuccessDisable MDOptions = 1 << 5  // PTL_MD_EVENT_SUCCESS_DISABLE
	MDVolatile            MDOptions = 1 << 6  // PTL_MD_VOLATILE
	MDEventSendDisable    MDOptions = 1 << 7  // PTL_MD_EVENT_SEND_DISABLE
	MDEventCTBytes        MDOptions = 1 << 15 // PTL_MD_EVENT_CT_BYTES (the bit of PTL_ME_EVENT_CT_BYTES)
)

// MEOptions are the options of match and list entries (PTL_ME_* / PTL_LE_*).
type MEOptions = me.Options

// ME/LE options (the same bits serve both; the ME-only ones are refused on LEs).
const (
	MEOpPut                = me.OpPut
	MEOpGet                = me.OpGet
	MEUseOnce              = me.UseOnce
	MEAckDisable           = me.AckDisable
	MEUnexpectedHdrDisable = me.UnexpectedHdrDisable
	MEIsAccessible         = me.IsAccessible
	MEEventLinkDisable     = me.EventLinkDisable
	MEEventCommDisable     = me.EventCommDisable
	MEEventFlowCtrlDisable = me.EventFlowCtrlDisable
	MEEventSuccessDisable  = me.EventSuccessDisable
	MEEventOverDisable     = me.EventOverDisable
	MEEventUnlinkDisable   = me.EventUnlinkDisable
	MEEventCTComm          = me.EventCTComm
	MEEventCTOverflow      = me.EventCTOverflow
	MEEventCTBytes         = me.EventCTBytes
	MEManageLocal          = me.ManageLocal
	MENoTruncate           = me.NoTruncate
	MEMayAlign             = me.MayAlign
)

// List selects the priority or overflow list of a portal table entry; Event.List
// has this type.
type List = eq.List

// The lists.
const (
	PriorityList = eq.PriorityList // PTL_PRIORITY_LIST
	OverflowList = eq.OverflowList // PTL_OVERFLOW_LIST
)

// SearchOp is the operation of MESearch/LESearch.
type SearchOp = me.SearchOp

// The search operations.
const (
	SearchOnly   = me.SearchOnly   // PTL_SEARCH_ONLY: report matching unexpected headers
	SearchDelete = me.SearchDelete // PTL_SEARCH_DELETE: report and remove them
)

// AckReq is the acknowledgment a put or atomic asks for.
type AckReq uint8

// Ack kinds (PTL_*_ACK_REQ).
const (
	NoAckReq   AckReq = iota // PTL_NO_ACK_REQ
	AckReqFull               // PTL_ACK_REQ: an ACK event
	CTAckReq                 // PTL_CT_ACK_REQ: counted on the MD's CT only
	OCAckReq                 // PTL_OC_ACK_REQ: operation completed, counted on the CT only
)

// Event is a full event (ptl_event_t); Start is an offset into the memory of the
// entry or descriptor the event is about.
type Event = eq.Event

// EventKind is the type of an event (PTL_EVENT_*).
type EventKind = eq.EventKind

// Event kinds (portals4.h's values).
const (
	EventGet                 = eq.EventGet                 // PTL_EVENT_GET
	EventGetOverflow         = eq.EventGetOverflow         // PTL_EVENT_GET_OVERFLOW
	EventPut                 = eq.EventPut                 // PTL_EVENT_PUT
	EventPutOverflow         = eq.EventPutOverflow         // PTL_EVENT_PUT_OVERFLOW
	EventAtomic              = eq.EventAtomic              // PTL_EVENT_ATOMIC
	EventAtomicOverflow      = eq.EventAtomicOverflow      // PTL_EVENT_ATOMIC_OVERFLOW
	EventFetchAtomic         = eq.EventFetchAtomic         // PTL_EVENT_FETCH_ATOMIC
	EventFetchAtomicOverflow = eq.EventFetchAtomicOverflow // PTL_EVENT_FETCH_ATOMIC_OVERFLOW
	EventReply               = eq.EventReply               // PTL_EVENT_REPLY
	EventSend                = eq.EventSend                // PTL_EVENT_SEND
	EventAck                 = eq.EventAck                 // PTL_EVENT_ACK
	EventPTDisabled          = eq.EventPTDisabled          // PTL_EVENT_PT_DISABLED
	EventLink                = eq.EventLink                // PTL_EVENT_LINK
	EventAutoUnlink          = eq.EventAutoUnlink          // PTL_EVENT_AUTO_UNLINK
	EventAutoFree            = eq.EventAutoFree            // PTL_EVENT_AUTO_FREE
	EventSearch              = eq.EventSearch              // PTL_EVENT_SEARCH
)

// NIFail is the ni_fail_type of an event.
type NIFail = eq.NIFail

// NI failure types (portals4.h's values; NITargetInvalid is goportals' own).
const (
	NIOK            = eq.NIOK            // PTL_NI_OK
	NIUndeliverable = eq.NIUndeliverable // PTL_NI_UNDELIVERABLE
	NIDropped       = eq.NIDropped       // PTL_NI_DROPPED
	NIPTDisabled    = eq.NIPTDisabled    // PTL_NI_PT_DISABLED
	NIPermViolation = eq.NIPermViolation // PTL_NI_PERM_VIOLATION
	NIOpViolation   = eq.NIOpViolation   // PTL_NI_OP_VIOLATION
	NINoMatch       = eq.NINoMatch       // PTL_NI_NO_MATCH
	NISegv          = eq.NISegv          // PTL_NI_SEGV
	NITargetInvalid = eq.NITargetInvalid // the target process or portal index does not exist
)

// AtomicOp and AtomicType are the operation and datatype of atomics.
type (
	AtomicOp   = eq.AtomicOp
	AtomicType = eq.AtomicType
)

// Atomic operations (portals4.h's values).
const (
	OpMin     = eq.OpMin     // PTL_MIN
	OpMax     = eq.OpMax     // PTL_MAX
	OpSum     = eq.OpSum     // PTL_SUM
	OpProd    = eq.OpProd    // PTL_PROD
	OpLOr     = eq.OpLOr     // PTL_LOR
	OpLAnd    = eq.OpLAnd    // PTL_LAND
	OpBOr     = eq.OpBOr     // PTL_BOR
	OpBAnd    = eq.OpBAnd    // PTL_BAND
	OpLXor    = eq.OpLXor    // PTL_LXOR
	OpBXor    = eq.OpBXor    // PTL_BXOR
	OpSwap    = eq.OpSwap    // PTL_SWAP
	OpCSwap   = eq.OpCSwap   // PTL_CSWAP
	OpCSwapNE = eq.OpCSwapNE // PTL_CSWAP_NE
	OpCSwapLE = eq.OpCSwapLE // PTL_CSWAP_LE
	OpCSwapLT = eq.OpCSwapLT // PTL_CSWAP_LT
	OpCSwapGE = eq.OpCSwapGE // PTL_CSWAP_GE
	OpCSwapGT = eq.OpCSwapGT // PTL_CSWAP_GT
	OpMSwap   = eq.OpMSwap   // PTL_MSWAP
)

// Atomic datatypes (portals4.h's values).
const (
	Int8              = eq.Int8              // PTL_INT8_T
	Uint8             = eq.Uint8             // PTL_UINT8_T
	Int16             = eq.Int16             // PTL_INT16_T
	Uint16            = eq.Uint16            // PTL_UINT16_T
	Int32             = eq.Int32             // PTL_INT32_T
	Uint32            = eq.Uint32            // PTL_UINT32_T
	Float             = eq.Float             // PTL_FLOAT
	Int64             = eq.Int64             // PTL_INT64_T
	Uint64            = eq.Uint64            // PTL_UINT64_T
	Double            = eq.Double            // PTL_DOUBLE
	FloatComplex      = eq.FloatComplex      // PTL_FLOAT_COMPLEX
	DoubleComplex     = eq.DoubleComplex     // PTL_DOUBLE_COMPLEX
	LongDouble        = eq.LongDouble        // PTL_LONG_DOUBLE
	LongDoubleComplex = eq.LongDoubleComplex // PTL_LONG_DOUBLE_COMPLEX
)

// CTEvent is the value of a counting event.
type CTEvent = eq.CTEvent

// MatchBits are the 64 match bits of a message.
type MatchBits = uint64

// Limits are an NI's limits (ptl_ni_limits_t).
type Limits struct {
	MaxEntries, MaxUnexpectedHeaders, MaxMDs, MaxEQs, MaxCTs, MaxPTIndex int
	MaxIovecs, MaxListSize, MaxTriggeredOps                              int
	MaxMsgSize, MaxAtomicSize, MaxFetchAtomicSize                        uint64
	MaxWAWOrderedSize, MaxWAROrderedSize, MaxVolatileSize                uint64
	Features                                                             uint32
}

// Feature bits of Limits.Features.
const (
	FeatureTargetBindInaccessible = 1 << iota // PTL_TARGET_BIND_INACCESSIBLE
	FeatureTotalDataOrdering                  // PTL_TOTAL_DATA_ORDERING
	FeatureCoherentAtomics                    // PTL_COHERENT_ATOMICS
)

// SR is an NI status register.
type SR int

// Status registers (PTL_SR_*).
const (
	SRDropCount SR = iota
	SRPermissionsViolations
	SROperationsViolations
	SRMalformed
	numSR
)
