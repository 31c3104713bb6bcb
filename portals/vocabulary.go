package portals

import (
	"github.com/goportals/goportals/eq"
	"github.com/goportals/goportals/me"
	"github.com/goportals/goportals/ptlerr"
)

// Process identifiers: one type per concept, shared with packages eq and me, so a
// value from an event compares with a value of this package.
type (
	// NID is a node identifier of physical addressing (ptl_nid_t).
	NID = eq.NID
	// PID is a process identifier of physical addressing (ptl_pid_t).
	PID = eq.PID
	// Rank is a process identifier of logical addressing (ptl_rank_t).
	Rank = eq.Rank
	// UID is the user identifier carried in a message header (ptl_uid_t).
	UID = eq.UID
	// ProcessID names a process (ptl_process_t): NID and PID on a physical NI,
	// Rank on a logical one.
	ProcessID = eq.ProcessID
)

// Wildcards, with portals4.h's values.
const (
	NIDAny  = eq.NIDAny  // PTL_NID_ANY (0xffff)
	PIDAny  = eq.PIDAny  // PTL_PID_ANY (0xffff)
	RankAny = eq.RankAny // PTL_RANK_ANY
	UIDAny  = eq.UIDAny  // PTL_UID_ANY
)

// PTIndex is a portal table index (ptl_pt_index_t).
type PTIndex uint32

// PTAny asks PTAlloc for any free index (PTL_PT_ANY).
const PTAny = PTIndex(^uint32(0))

// Interface selects a network interface (ptl_interface_t).
type Interface uint32

// IfaceDefault is the provider's first device (PTL_IFACE_DEFAULT).
const IfaceDefault = Interface(^uint32(0))

// NIOptions are the options of NIInit: one of NIMatching and NINoMatching, and one
// of NILogical and NIPhysical.
type NIOptions uint32

// NI options, with portals4.h's values.
const (
	NIMatching   NIOptions = 1 << 0 // PTL_NI_MATCHING
	NINoMatching NIOptions = 1 << 1 // PTL_NI_NO_MATCHING
	NILogical    NIOptions = 1 << 2 // PTL_NI_LOGICAL
	NIPhysical   NIOptions = 1 << 3 // PTL_NI_PHYSICAL
)

// PTOptions are the options of PTAlloc.
type PTOptions uint32

// PT options, with portals4.h's values.
const (
	PTOnlyUseOnce    PTOptions = 1 << 0 // PTL_PT_ONLY_USE_ONCE (a hint)
	PTFlowCtrl       PTOptions = 1 << 1 // PTL_PT_FLOWCTRL
	PTOnlyTruncate   PTOptions = 1 << 2 // PTL_PT_ONLY_TRUNCATE (a hint)
	PTMatchUnordered PTOptions = 1 << 3 // PTL_PT_MATCH_UNORDERED
)

// MDOptions are the options of a memory descriptor.
type MDOptions uint32

// MD options, with portals4.h's values (PTL_IOVEC is expressed by MDSpec.Iovecs).
const (
	MDEventCTSend         MDOptions = 1 << 1  // PTL_MD_EVENT_CT_SEND
	MDEventCTReply        MDOptions = 1 << 2  // PTL_MD_EVENT_CT_REPLY
	MDEventCTAck          MDOptions = 1 << 3  // PTL_MD_EVENT_CT_ACK
	MDUnordered           MDOptions = 1 << 4  // PTL_MD_UNORDERED
	MDEventSuccessDisable MDOptions = 1 << 5  // PTL_MD_EVENT_SUCCESS_DISABLE
	MDVolatile            MDOptions = 1 << 6  // PTL_MD_VOLATILE
	MDEventSendDisable    MDOptions = 1 << 7  // PTL_MD_EVENT_SEND_DISABLE
	MDEventCTBytes        MDOptions = 1 << 15 // PTL_MD_EVENT_CT_BYTES
)

// MEOptions are the options of a match or list entry (package me).
type MEOptions = me.Options

// ME and LE options, with portals4.h's values.
const (
	MEOpPut                = me.OpPut                // PTL_ME_OP_PUT
	MEOpGet                = me.OpGet                // PTL_ME_OP_GET
	MEUseOnce              = me.UseOnce              // PTL_ME_USE_ONCE
	MEAckDisable           = me.AckDisable           // PTL_ME_ACK_DISABLE
	MEUnexpectedHdrDisable = me.UnexpectedHdrDisable // PTL_ME_UNEXPECTED_HDR_DISABLE
	MEIsAccessible         = me.IsAccessible         // PTL_ME_IS_ACCESSIBLE
	MEEventLinkDisable     = me.EventLinkDisable     // PTL_ME_EVENT_LINK_DISABLE
	MEEventCommDisable     = me.EventCommDisable     // PTL_ME_EVENT_COMM_DISABLE
	MEEventFlowCtrlDisable = me.EventFlowCtrlDisable // PTL_ME_EVENT_FLOWCTRL_DISABLE
	MEEventSuccessDisable  = me.EventSuccessDisable  // PTL_ME_EVENT_SUCCESS_DISABLE
	MEEventOverDisable     = me.EventOverDisable     // PTL_ME_EVENT_OVER_DISABLE
	MEEventUnlinkDisable   = me.EventUnlinkDisable   // PTL_ME_EVENT_UNLINK_DISABLE
	MEEventCTComm          = me.EventCTComm          // PTL_ME_EVENT_CT_COMM
	MEEventCTOverflow      = me.EventCTOverflow      // PTL_ME_EVENT_CT_OVERFLOW
	MEEventCTBytes         = me.EventCTBytes         // PTL_ME_EVENT_CT_BYTES
	MEManageLocal          = me.ManageLocal          // PTL_ME_MANAGE_LOCAL
	MENoTruncate           = me.NoTruncate           // PTL_ME_NO_TRUNCATE
	MEMayAlign             = me.MayAlign             // PTL_ME_MAY_ALIGN
)

// List selects the priority or overflow list of a portal table entry; Event.List
// has this type.
type List = eq.List

// The lists.
const (
	PriorityList = eq.PriorityList // PTL_PRIORITY_LIST
	OverflowList = eq.OverflowList // PTL_OVERFLOW_LIST
)

// SearchOp is the operation of PT.Search.
type SearchOp = me.SearchOp

// The search operations.
const (
	SearchOnly   = me.SearchOnly   // PTL_SEARCH_ONLY: report matching unexpected headers
	SearchDelete = me.SearchDelete // PTL_SEARCH_DELETE: report and remove them
)

// AckReq is the acknowledgment a put or atomic asks for. Its zero value asks for
// none.
type AckReq uint8

// Acknowledgment kinds, with portals4.h's values.
const (
	NoAckReq   AckReq = 0 // PTL_NO_ACK_REQ: no acknowledgment
	AckReqFull AckReq = 1 // PTL_ACK_REQ: an ACK event
	CTAckReq   AckReq = 2 // PTL_CT_ACK_REQ: counted on the MD's counter only
	OCAckReq   AckReq = 3 // PTL_OC_ACK_REQ: operation completed, counted on the counter only
)

// Event is a full event (ptl_event_t, package eq).
type Event = eq.Event

// EventKind is the type of an event (PTL_EVENT_*).
type EventKind = eq.EventKind

// Event kinds, with portals4.h's values.
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

// NIFail is the failure type of an event (ptl_ni_fail_t).
type NIFail = eq.NIFail

// Failure types, with portals4.h's values (NITargetInvalid is goportals' own).
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

// AtomicOp is the operation of an atomic; AtomicType its element datatype.
type (
	AtomicOp   = eq.AtomicOp
	AtomicType = eq.AtomicType
)

// Atomic operations, with portals4.h's values.
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

// Atomic datatypes, with portals4.h's values.
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

// CTEvent is the value of a counting event: successes and failures.
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

// Feature bits of Limits.Features, with portals4.h's values.
const (
	FeatureTargetBindInaccessible = 1 << 0 // PTL_TARGET_BIND_INACCESSIBLE
	FeatureTotalDataOrdering      = 1 << 1 // PTL_TOTAL_DATA_ORDERING
	FeatureCoherentAtomics        = 1 << 2 // PTL_COHERENT_ATOMICS
)

// SR names an NI status register (ptl_sr_index_t).
type SR int

// Status registers, with portals4.h's values.
const (
	SRDropCount             SR = 0 // PTL_SR_DROP_COUNT
	SRPermissionsViolations SR = 1 // PTL_SR_PERMISSION_VIOLATIONS
	SROperationsViolations  SR = 2 // PTL_SR_OPERATION_VIOLATIONS
	SRMalformed             SR = 3 // malformed messages dropped (goportals' own)
)

// Errno is a Portals return code with portals4.h's numeric value; every error the
// API returns is an *OpError whose Errno matches one of these with errors.Is.
type Errno = ptlerr.Errno

// OpError is the error of one call: the call's name, its Portals code and the cause.
type OpError = ptlerr.OpError

// The Portals return codes.
const (
	OK            = ptlerr.OK            // PTL_OK
	ArgInvalid    = ptlerr.ArgInvalid    // PTL_ARG_INVALID
	CTNoneReached = ptlerr.CTNoneReached // PTL_CT_NONE_REACHED
	EQDropped     = ptlerr.EQDropped     // PTL_EQ_DROPPED
	EQEmpty       = ptlerr.EQEmpty       // PTL_EQ_EMPTY
	Fail          = ptlerr.Fail          // PTL_FAIL
	Ignored       = ptlerr.Ignored       // PTL_IGNORED
	InUse         = ptlerr.InUse         // PTL_IN_USE
	Interrupted   = ptlerr.Interrupted   // PTL_INTERRUPTED
	ListTooLong   = ptlerr.ListTooLong   // PTL_LIST_TOO_LONG
	NoInit        = ptlerr.NoInit        // PTL_NO_INIT
	NoSpace       = ptlerr.NoSpace       // PTL_NO_SPACE
	PIDInUse      = ptlerr.PIDInUse      // PTL_PID_IN_USE
	PTFull        = ptlerr.PTFull        // PTL_PT_FULL
	PTEQNeeded    = ptlerr.PTEQNeeded    // PTL_PT_EQ_NEEDED
	PTInUse       = ptlerr.PTInUse       // PTL_PT_IN_USE
)

// ErrNotSupported marks a feature goportals does not provide here; it comes
// wrapped in an *OpError.
var ErrNotSupported = ptlerr.ErrNotSupported

// ErrnoOf returns the Portals code of err: OK for nil, Fail for an error without one.
func ErrnoOf(err error) Errno { return ptlerr.ErrnoOf(err) }

// ParseErrno returns the code named s ("PTL_ARG_INVALID" or "ARG_INVALID").
func ParseErrno(s string) (Errno, bool) { return ptlerr.ParseErrno(s) }
