package main

/*
#cgo CFLAGS: -I${SRCDIR}/../include
#include <string.h>
#include <portals4.h>

static uint64_t pack_phys(uint32_t nid, uint32_t pid) {
	ptl_process_t p;
	uint64_t v = 0;
	memset(&p, 0, sizeof p);
	p.phys.nid = nid;
	p.phys.pid = pid;
	memcpy(&v, &p, sizeof p);
	return v;
}

static uint64_t pack_rank(uint32_t rank) {
	ptl_process_t p;
	uint64_t v = 0;
	memset(&p, 0, sizeof p);
	p.rank = rank;
	memcpy(&v, &p, sizeof p);
	return v;
}
*/
import "C"

import (
	"github.com/goportals/goportals/portals"
)

// pair is one value that portals4.h and package portals both define; the
// forwarding functions convert between them by number, so they must be equal.
type pair struct {
	name   string
	c, gov uint64
}

// vocabulary lists every value the forwarding converts by number.
func vocabulary() []pair {
	return []pair{
		{"PTL_OK", C.PTL_OK, uint64(portals.OK)},
		{"PTL_ARG_INVALID", C.PTL_ARG_INVALID, uint64(portals.ArgInvalid)},
		{"PTL_CT_NONE_REACHED", C.PTL_CT_NONE_REACHED, uint64(portals.CTNoneReached)},
		{"PTL_EQ_DROPPED", C.PTL_EQ_DROPPED, uint64(portals.EQDropped)},
		{"PTL_EQ_EMPTY", C.PTL_EQ_EMPTY, uint64(portals.EQEmpty)},
		{"PTL_FAIL", C.PTL_FAIL, uint64(portals.Fail)},
		{"PTL_IGNORED", C.PTL_IGNORED, uint64(portals.Ignored)},
		{"PTL_IN_USE", C.PTL_IN_USE, uint64(portals.InUse)},
		{"PTL_INTERRUPTED", C.PTL_INTERRUPTED, uint64(portals.Interrupted)},
		{"PTL_LIST_TOO_LONG", C.PTL_LIST_TOO_LONG, uint64(portals.ListTooLong)},
		{"PTL_NO_INIT", C.PTL_NO_INIT, uint64(portals.NoInit)},
		{"PTL_NO_SPACE", C.PTL_NO_SPACE, uint64(portals.NoSpace)},
		{"PTL_PID_IN_USE", C.PTL_PID_IN_USE, uint64(portals.PIDInUse)},
		{"PTL_PT_FULL", C.PTL_PT_FULL, uint64(portals.PTFull)},
		{"PTL_PT_EQ_NEEDED", C.PTL_PT_EQ_NEEDED, uint64(portals.PTEQNeeded)},
		{"PTL_PT_IN_USE", C.PTL_PT_IN_USE, uint64(portals.PTInUse)},

		{"PTL_NID_ANY", C.PTL_NID_ANY, uint64(portals.NIDAny)},
		{"PTL_PID_ANY", C.PTL_PID_ANY, uint64(portals.PIDAny)},
		{"PTL_RANK_ANY", C.PTL_RANK_ANY, uint64(portals.RankAny)},
		{"PTL_UID_ANY", C.PTL_UID_ANY, uint64(portals.UIDAny)},
		{"PTL_PT_ANY", C.PTL_PT_ANY, uint64(portals.PTAny)},
		{"PTL_IFACE_DEFAULT", C.PTL_IFACE_DEFAULT, uint64(portals.IfaceDefault)},
		{"PTL_TIME_FOREVER", C.PTL_TIME_FOREVER, uint64(^uint32(0))},

		{"PTL_NI_MATCHING", C.PTL_NI_MATCHING, uint64(portals.NIMatching)},
		{"PTL_NI_NO_MATCHING", C.PTL_NI_NO_MATCHING, uint64(portals.NINoMatching)},
		{"PTL_NI_LOGICAL", C.PTL_NI_LOGICAL, uint64(portals.NILogical)},
		{"PTL_NI_PHYSICAL", C.PTL_NI_PHYSICAL, uint64(portals.NIPhysical)},
		{"PTL_SR_DROP_COUNT", C.PTL_SR_DROP_COUNT, uint64(portals.SRDropCount)},
		{"PTL_SR_PERMISSION_VIOLATIONS", C.PTL_SR_PERMISSION_VIOLATIONS, uint64(portals.SRPermissionsViolations)},
		{"PTL_SR_OPERATION_VIOLATIONS", C.PTL_SR_OPERATION_VIOLATIONS, uint64(portals.SROperationsViolations)},
		{"PTL_TARGET_BIND_INACCESSIBLE", C.PTL_TARGET_BIND_INACCESSIBLE, portals.FeatureTargetBindInaccessible},
		{"PTL_TOTAL_DATA_ORDERING", C.PTL_TOTAL_DATA_ORDERING, portals.FeatureTotalDataOrdering},
		{"PTL_COHERENT_ATOMICS", C.PTL_COHERENT_ATOMICS, portals.FeatureCoherentAtomics},

		{"PTL_PT_ONLY_USE_ONCE", C.PTL_PT_ONLY_USE_ONCE, uint64(portals.PTOnlyUseOnce)},
		{"PTL_PT_FLOWCTRL", C.PTL_PT_FLOWCTRL, uint64(portals.PTFlowCtrl)},
		{"PTL_PT_ONLY_TRUNCATE", C.PTL_PT_ONLY_TRUNCATE, uint64(portals.PTOnlyTruncate)},
		{"PTL_PT_MATCH_UNORDERED", C.PTL_PT_MATCH_UNORDERED, uint64(portals.PTMatchUnordered)},

		{"PTL_MD_EVENT_CT_SEND", C.PTL_MD_EVENT_CT_SEND, uint64(portals.MDEventCTSend)},
		{"PTL_MD_EVENT_CT_REPLY", C.PTL_MD_EVENT_CT_REPLY, uint64(portals.MDEventCTReply)},
		{"PTL_MD_EVENT_CT_ACK", C.PTL_MD_EVENT_CT_ACK, uint64(portals.MDEventCTAck)},
		{"PTL_MD_UNORDERED", C.PTL_MD_UNORDERED, uint64(portals.MDUnordered)},
		{"PTL_MD_EVENT_SUCCESS_DISABLE", C.PTL_MD_EVENT_SUCCESS_DISABLE, uint64(portals.MDEventSuccessDisable)},
		{"PTL_MD_VOLATILE", C.PTL_MD_VOLATILE, uint64(portals.MDVolatile)},
		{"PTL_MD_EVENT_SEND_DISABLE", C.PTL_MD_EVENT_SEND_DISABLE, uint64(portals.MDEventSendDisable)},
		{"PTL_MD_EVENT_CT_BYTES", C.PTL_MD_EVENT_CT_BYTES, uint64(portals.MDEventCTBytes)},

		{"PTL_ME_OP_PUT", C.PTL_ME_OP_PUT, uint64(portals.MEOpPut)},
		{"PTL_ME_OP_GET", C.PTL_ME_OP_GET, uint64(portals.MEOpGet)},
		{"PTL_ME_USE_ONCE", C.PTL_ME_USE_ONCE, uint64(portals.MEUseOnce)},
		{"PTL_ME_ACK_DISABLE", C.PTL_ME_ACK_DISABLE, uint64(portals.MEAckDisable)},
		{"PTL_ME_UNEXPECTED_HDR_DISABLE", C.PTL_ME_UNEXPECTED_HDR_DISABLE, uint64(portals.MEUnexpectedHdrDisable)},
		{"PTL_ME_IS_ACCESSIBLE", C.PTL_ME_IS_ACCESSIBLE, uint64(portals.MEIsAccessible)},
		{"PTL_ME_EVENT_LINK_DISABLE", C.PTL_ME_EVENT_LINK_DISABLE, uint64(portals.MEEventLinkDisable)},
		{"PTL_ME_EVENT_COMM_DISABLE", C.PTL_ME_EVENT_COMM_DISABLE, uint64(portals.MEEventCommDisable)},
		{"PTL_ME_EVENT_FLOWCTRL_DISABLE", C.PTL_ME_EVENT_FLOWCTRL_DISABLE, uint64(portals.MEEventFlowCtrlDisable)},
		{"PTL_ME_EVENT_SUCCESS_DISABLE", C.PTL_ME_EVENT_SUCCESS_DISABLE, uint64(portals.MEEventSuccessDisable)},
		{"PTL_ME_EVENT_OVER_DISABLE", C.PTL_ME_EVENT_OVER_DISABLE, uint64(portals.MEEventOverDisable)},
		{"PTL_ME_EVENT_UNLINK_DISABLE", C.PTL_ME_EVENT_UNLINK_DISABLE, uint64(portals.MEEventUnlinkDisable)},
		{"PTL_ME_EVENT_CT_COMM", C.PTL_ME_EVENT_CT_COMM, uint64(portals.MEEventCTComm)},
		{"PTL_ME_EVENT_CT_OVERFLOW", C.PTL_ME_EVENT_CT_OVERFLOW, uint64(portals.MEEventCTOverflow)},
		{"PTL_ME_EVENT_CT_BYTES", C.PTL_ME_EVENT_CT_BYTES, uint64(portals.MEEventCTBytes)},
		{"PTL_ME_MANAGE_LOCAL", C.PTL_ME_MANAGE_LOCAL, uint64(portals.MEManageLocal)},
		{"PTL_ME_NO_TRUNCATE", C.PTL_ME_NO_TRUNCATE, uint64(portals.MENoTruncate)},
		{"PTL_ME_MAY_ALIGN", C.PTL_ME_MAY_ALIGN, uint64(portals.MEMayAlign)},

		{"PTL_PRIORITY_LIST", C.PTL_PRIORITY_LIST, uint64(portals.PriorityList)},
		{"PTL_OVERFLOW_LIST", C.PTL_OVERFLOW_LIST, uint64(portals.OverflowList)},
		{"PTL_SEARCH_ONLY", C.PTL_SEARCH_ONLY, uint64(portals.SearchOnly)},
		{"PTL_SEARCH_DELETE", C.PTL_SEARCH_DELETE, uint64(portals.SearchDelete)},
		{"PTL_NO_ACK_REQ", C.PTL_NO_ACK_REQ, uint64(portals.NoAckReq)},
		{"PTL_ACK_REQ", C.PTL_ACK_REQ, uint64(portals.AckReqFull)},
		{"PTL_CT_ACK_REQ", C.PTL_CT_ACK_REQ, uint64(portals.CTAckReq)},
		{"PTL_OC_ACK_REQ", C.PTL_OC_ACK_REQ, uint64(portals.OCAckReq)},

		{"PTL_NI_OK", C.PTL_NI_OK, uint64(portals.NIOK)},
		{"PTL_NI_UNDELIVERABLE", C.PTL_NI_UNDELIVERABLE, uint64(portals.NIUndeliverable)},
		{"PTL_NI_DROPPED", C.PTL_NI_DROPPED, uint64(portals.NIDropped)},
		{"PTL_NI_PT_DISABLED", C.PTL_NI_PT_DISABLED, uint64(portals.NIPTDisabled)},
		{"PTL_NI_PERM_VIOLATION", C.PTL_NI_PERM_VIOLATION, uint64(portals.NIPermViolation)},
		{"PTL_NI_OP_VIOLATION", C.PTL_NI_OP_VIOLATION, uint64(portals.NIOpViolation)},
		{"PTL_NI_NO_MATCH", C.PTL_NI_NO_MATCH, uint64(portals.NINoMatch)},
		{"PTL_NI_SEGV", C.PTL_NI_SEGV, uint64(portals.NISegv)},

		{"PTL_MIN", C.PTL_MIN, uint64(portals.OpMin)},
		{"PTL_MAX", C.PTL_MAX, uint64(portals.OpMax)},
		{"PTL_SUM", C.PTL_SUM, uint64(portals.OpSum)},
		{"PTL_PROD", C.PTL_PROD, uint64(portals.OpProd)},
		{"PTL_LOR", C.PTL_LOR, uint64(portals.OpLOr)},
		{"PTL_LAND", C.PTL_LAND, uint64(portals.OpLAnd)},
		{"PTL_BOR", C.PTL_BOR, uint64(portals.OpBOr)},
		{"PTL_BAND", C.PTL_BAND, uint64(portals.OpBAnd)},
		{"PTL_LXOR", C.PTL_LXOR, uint64(portals.OpLXor)},
		{"PTL_BXOR", C.PTL_BXOR, uint64(portals.OpBXor)},
		{"PTL_SWAP", C.PTL_SWAP, uint64(portals.OpSwap)},
		{"PTL_CSWAP", C.PTL_CSWAP, uint64(portals.OpCSwap)},
		{"PTL_CSWAP_NE", C.PTL_CSWAP_NE, uint64(portals.OpCSwapNE)},
		{"PTL_CSWAP_LE", C.PTL_CSWAP_LE, uint64(portals.OpCSwapLE)},
		{"PTL_CSWAP_LT", C.PTL_CSWAP_LT, uint64(portals.OpCSwapLT)},
		{"PTL_CSWAP_GE", C.PTL_CSWAP_GE, uint64(portals.OpCSwapGE)},
		{"PTL_CSWAP_GT", C.PTL_CSWAP_GT, uint64(portals.OpCSwapGT)},
		{"PTL_MSWAP", C.PTL_MSWAP, uint64(portals.OpMSwap)},

		{"PTL_INT8_T", C.PTL_INT8_T, uint64(portals.Int8)},
		{"PTL_UINT8_T", C.PTL_UINT8_T, uint64(portals.Uint8)},
		{"PTL_INT16_T", C.PTL_INT16_T, uint64(portals.Int16)},
		{"PTL_UINT16_T", C.PTL_UINT16_T, uint64(portals.Uint16)},
		{"PTL_INT32_T", C.PTL_INT32_T, uint64(portals.Int32)},
		{"PTL_UINT32_T", C.PTL_UINT32_T, uint64(portals.Uint32)},
		{"PTL_FLOAT", C.PTL_FLOAT, uint64(portals.Float)},
		{"PTL_INT64_T", C.PTL_INT64_T, uint64(portals.Int64)},
		{"PTL_UINT64_T", C.PTL_UINT64_T, uint64(portals.Uint64)},
		{"PTL_DOUBLE", C.PTL_DOUBLE, uint64(portals.Double)},
		{"PTL_FLOAT_COMPLEX", C.PTL_FLOAT_COMPLEX, uint64(portals.FloatComplex)},
		{"PTL_DOUBLE_COMPLEX", C.PTL_DOUBLE_COMPLEX, uint64(portals.DoubleComplex)},
		{"PTL_LONG_DOUBLE", C.PTL_LONG_DOUBLE, uint64(portals.LongDouble)},
		{"PTL_LONG_DOUBLE_COMPLEX", C.PTL_LONG_DOUBLE_COMPLEX, uint64(portals.LongDoubleComplex)},

		{"PTL_EVENT_GET", C.PTL_EVENT_GET, uint64(portals.EventGet)},
		{"PTL_EVENT_GET_OVERFLOW", C.PTL_EVENT_GET_OVERFLOW, uint64(portals.EventGetOverflow)},
		{"PTL_EVENT_PUT", C.PTL_EVENT_PUT, uint64(portals.EventPut)},
		{"PTL_EVENT_PUT_OVERFLOW", C.PTL_EVENT_PUT_OVERFLOW, uint64(portals.EventPutOverflow)},
		{"PTL_EVENT_ATOMIC", C.PTL_EVENT_ATOMIC, uint64(portals.EventAtomic)},
		{"PTL_EVENT_ATOMIC_OVERFLOW", C.PTL_EVENT_ATOMIC_OVERFLOW, uint64(portals.EventAtomicOverflow)},
		{"PTL_EVENT_FETCH_ATOMIC", C.PTL_EVENT_FETCH_ATOMIC, uint64(portals.EventFetchAtomic)},
		{"PTL_EVENT_FETCH_ATOMIC_OVERFLOW", C.PTL_EVENT_FETCH_ATOMIC_OVERFLOW, uint64(portals.EventFetchAtomicOverflow)},
		{"PTL_EVENT_REPLY", C.PTL_EVENT_REPLY, uint64(portals.EventReply)},
		{"PTL_EVENT_SEND", C.PTL_EVENT_SEND, uint64(portals.EventSend)},
		{"PTL_EVENT_ACK", C.PTL_EVENT_ACK, uint64(portals.EventAck)},
		{"PTL_EVENT_PT_DISABLED", C.PTL_EVENT_PT_DISABLED, uint64(portals.EventPTDisabled)},
		{"PTL_EVENT_LINK", C.PTL_EVENT_LINK, uint64(portals.EventLink)},
		{"PTL_EVENT_AUTO_UNLINK", C.PTL_EVENT_AUTO_UNLINK, uint64(portals.EventAutoUnlink)},
		{"PTL_EVENT_AUTO_FREE", C.PTL_EVENT_AUTO_FREE, uint64(portals.EventAutoFree)},
		{"PTL_EVENT_SEARCH", C.PTL_EVENT_SEARCH, uint64(portals.EventSearch)},
	}
}

// packedIDs returns the 8 bytes of ptl_process_t values built by C: a
// physical id {nid, pid} and a rank, for the test of packID and unpackID.
func packedIDs(nid, pid, rank uint32) (phys, logical uint64) {
	return uint64(C.pack_phys(C.uint32_t(nid), C.uint32_t(pid))), uint64(C.pack_rank(C.uint32_t(rank)))
}
