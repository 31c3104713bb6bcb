package portals

import (
	"github.com/goportals/goportals/eq"
	"github.com/goportals/goportals/me"
)

// NID, PID, Rank and UID identify nodes, processes, logical ranks and users.
type (
	NID  = me.NID
	PID  = me.PID
	Rank = me.Rank
	UID  = me.UID
)

// ProcessID names a process: NID and PID on a physically addressed NI, Rank on a
// logically addressed one (ptl_process_t).
type ProcessID = me.ProcessID

// Wildcards and special values.
const (
	NIDAny  = me.NIDAny        // PTL_NID_ANY (0xffff)
	PIDAny  = me.PIDAny        // PTL_PID_ANY (0xffff)
	RankAny = Rank(^uint32(0)) // PTL_RANK_ANY
	UIDAny  = UID(^uint32(0))  // PTL_UID_ANY
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

// List selects the priority or overflow list of a portal table entry.
type List = me.List

// The lists.
const (
	PriorityList = me.ListPriority
	OverflowList = me.ListOverflow
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

// NIFail is the ni_fail_type of an event.
type NIFail = eq.NIFail

// AtomicOp and AtomicType are the operation and datatype of atomics.
type (
	AtomicOp   = eq.AtomicOp
	AtomicType = eq.AtomicType
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
