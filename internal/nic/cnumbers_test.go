package nic

import (
	"testing"

	"github.com/goportals/goportals/eq"
	"github.com/goportals/goportals/me"
)

// TestNumbersEqualPortals4H checks every numeric value a C client passes through the
// API against the value portals4.h gives it, so values cross a C boundary unchanged.
func TestNumbersEqualPortals4H(t *testing.T) {
	cases := []struct {
		name      string
		got, want uint64
	}{
		{"PTL_OK", uint64(OK), 0}, {"PTL_ARG_INVALID", uint64(ArgInvalid), 1},
		{"PTL_CT_NONE_REACHED", uint64(CTNoneReached), 2}, {"PTL_EQ_DROPPED", uint64(EQDropped), 3},
		{"PTL_EQ_EMPTY", uint64(EQEmpty), 4}, {"PTL_FAIL", uint64(Fail), 5},
		{"PTL_IGNORED", uint64(Ignored), 6}, {"PTL_IN_USE", uint64(InUse), 7},
		{"PTL_INTERRUPTED", uint64(Interrupted), 8}, {"PTL_LIST_TOO_LONG", uint64(ListTooLong), 9},
		{"PTL_NO_INIT", uint64(NoInit), 10}, {"PTL_NO_SPACE", uint64(NoSpace), 11},
		{"PTL_PID_IN_USE", uint64(PIDInUse), 12}, {"PTL_PT_FULL", uint64(PTFull), 13},
		{"PTL_PT_EQ_NEEDED", uint64(PTEQNeeded), 14}, {"PTL_PT_IN_USE", uint64(PTInUse), 15},

		{"PTL_SR_DROP_COUNT", uint64(SRDropCount), 0},
		{"PTL_SR_PERMISSION_VIOLATIONS", uint64(SRPermissionsViolations), 1},
		{"PTL_SR_OPERATION_VIOLATIONS", uint64(SROperationsViolations), 2},

		{"PTL_PID_ANY", uint64(PIDAny), 0xffff}, {"PTL_NID_ANY", uint64(NIDAny), 0xffff},
		{"PTL_UID_ANY", uint64(UIDAny), 0xffffffff}, {"PTL_RANK_ANY", uint64(RankAny), 0xffffffff},
		{"PTL_PT_ANY", uint64(PTAny), 0xffffffff}, {"PTL_IFACE_DEFAULT", uint64(IfaceDefault), 0xffffffff},

		{"PTL_NI_MATCHING", uint64(NIMatching), 1}, {"PTL_NI_NO_MATCHING", uint64(NINoMatching), 2},
		{"PTL_NI_LOGICAL", uint64(NILogical), 4}, {"PTL_NI_PHYSICAL", uint64(NIPhysical), 8},
		{"PTL_TARGET_BIND_INACCESSIBLE", uint64(FeatureTargetBindInaccessible), 1},
		{"PTL_TOTAL_DATA_ORDERING", uint64(FeatureTotalDataOrdering), 2},
		{"PTL_COHERENT_ATOMICS", uint64(FeatureCoherentAtomics), 4},

		{"PTL_NI_OK", uint64(eq.NIOK), 0}, {"PTL_NI_UNDELIVERABLE", uint64(eq.NIUndeliverable), 1},
		{"PTL_NI_DROPPED", uint64(eq.NIDropped), 2}, {"PTL_NI_PT_DISABLED", uint64(eq.NIPTDisabled), 3},
		{"PTL_NI_PERM_VIOLATION", uint64(eq.NIPermViolation), 4},
		{"PTL_NI_OP_VIOLATION", uint64(eq.NIOpViolation), 5},
		{"PTL_NI_NO_MATCH", uint64(eq.NINoMatch), 6}, {"PTL_NI_SEGV", uint64(eq.NISegv), 7},

		{"PTL_PT_ONLY_USE_ONCE", uint64(PTOnlyUseOnce), 1}, {"PTL_PT_FLOWCTRL", uint64(PTFlowCtrl), 2},
		{"PTL_PT_ONLY_TRUNCATE", uint64(PTOnlyTruncate), 4},
		{"PTL_PT_MATCH_UNORDERED", uint64(PTMatchUnordered), 8},

		{"PTL_MD_EVENT_CT_SEND", uint64(MDEventCTSend), 1 << 1},
		{"PTL_MD_EVENT_CT_REPLY", uint64(MDEventCTReply), 1 << 2},
		{"PTL_MD_EVENT_CT_ACK", uint64(MDEventCTAck), 1 << 3},
		{"PTL_MD_UNORDERED", uint64(MDUnordered), 1 << 4},
		{"PTL_MD_EVENT_SUCCESS_DISABLE", uint64(MDEventSuccessDisable), 1 << 5},
		{"PTL_MD_VOLATILE", uint64(MDVolatile), 1 << 6},
		{"PTL_MD_EVENT_SEND_DISABLE", uint64(MDEventSendDisable), 1 << 7},
		{"PTL_MD_EVENT_CT_BYTES", uint64(MDEventCTBytes), 1 << 15},

		{"PTL_ME_OP_PUT", uint64(MEOpPut), 1 << 1}, {"PTL_ME_OP_GET", uint64(MEOpGet), 1 << 2},
		{"PTL_ME_USE_ONCE", uint64(MEUseOnce), 1 << 3}, {"PTL_ME_ACK_DISABLE", uint64(MEAckDisable), 1 << 4},
		{"PTL_ME_UNEXPECTED_HDR_DISABLE", uint64(MEUnexpectedHdrDisable), 1 << 5},
		{"PTL_ME_IS_ACCESSIBLE", uint64(MEIsAccessible), 1 << 6},
		{"PTL_ME_EVENT_LINK_DISABLE", uint64(MEEventLinkDisable), 1 << 7},
		{"PTL_ME_EVENT_COMM_DISABLE", uint64(MEEventCommDisable), 1 << 8},
		{"PTL_ME_EVENT_FLOWCTRL_DISABLE", uint64(MEEventFlowCtrlDisable), 1 << 9},
		{"PTL_ME_EVENT_SUCCESS_DISABLE", uint64(MEEventSuccessDisable), 1 << 10},
		{"PTL_ME_EVENT_OVER_DISABLE", uint64(MEEventOverDisable), 1 << 11},
		{"PTL_ME_EVENT_UNLINK_DISABLE", uint64(MEEventUnlinkDisable), 1 << 12},
		{"PTL_ME_EVENT_CT_COMM", uint64(MEEventCTComm), 1 << 13},
		{"PTL_ME_EVENT_CT_OVERFLOW", uint64(MEEventCTOverflow), 1 << 14},
		{"PTL_ME_EVENT_CT_BYTES", uint64(MEEventCTBytes), 1 << 15},
		{"PTL_ME_MANAGE_LOCAL", uint64(MEManageLocal), 1 << 16},
		{"PTL_ME_NO_TRUNCATE", uint64(MENoTruncate), 1 << 17},
		{"PTL_ME_MAY_ALIGN", uint64(MEMayAlign), 1 << 18},

		{"PTL_PRIORITY_LIST", uint64(PriorityList), 0}, {"PTL_OVERFLOW_LIST", uint64(OverflowList), 1},
		{"PTL_SEARCH_ONLY", uint64(me.SearchOnly), 0}, {"PTL_SEARCH_DELETE", uint64(me.SearchDelete), 1},
		{"PTL_NO_ACK_REQ", uint64(NoAckReq), 0}, {"PTL_ACK_REQ", uint64(AckReqFull), 1},
		{"PTL_CT_ACK_REQ", uint64(CTAckReq), 2}, {"PTL_OC_ACK_REQ", uint64(OCAckReq), 3},

		{"PTL_EVENT_GET", uint64(eq.EventGet), 0}, {"PTL_EVENT_GET_OVERFLOW", uint64(eq.EventGetOverflow), 1},
		{"PTL_EVENT_PUT", uint64(eq.EventPut), 2}, {"PTL_EVENT_PUT_OVERFLOW", uint64(eq.EventPutOverflow), 3},
		{"PTL_EVENT_ATOMIC", uint64(eq.EventAtomic), 4},
		{"PTL_EVENT_ATOMIC_OVERFLOW", uint64(eq.EventAtomicOverflow), 5},
		{"PTL_EVENT_FETCH_ATOMIC", uint64(eq.EventFetchAtomic), 6},
		{"PTL_EVENT_FETCH_ATOMIC_OVERFLOW", uint64(eq.EventFetchAtomicOverflow), 7},
		{"PTL_EVENT_REPLY", uint64(eq.EventReply), 8}, {"PTL_EVENT_SEND", uint64(eq.EventSend), 9},
		{"PTL_EVENT_ACK", uint64(eq.EventAck), 10}, {"PTL_EVENT_PT_DISABLED", uint64(eq.EventPTDisabled), 11},
		{"PTL_EVENT_LINK", uint64(eq.EventLink), 12}, {"PTL_EVENT_AUTO_UNLINK", uint64(eq.EventAutoUnlink), 13},
		{"PTL_EVENT_AUTO_FREE", uint64(eq.EventAutoFree), 14}, {"PTL_EVENT_SEARCH", uint64(eq.EventSearch), 15},

		{"PTL_MIN", uint64(eq.OpMin), 0}, {"PTL_MAX", uint64(eq.OpMax), 1}, {"PTL_SUM", uint64(eq.OpSum), 2},
		{"PTL_PROD", uint64(eq.OpProd), 3}, {"PTL_LOR", uint64(eq.OpLOr), 4}, {"PTL_LAND", uint64(eq.OpLAnd), 5},
		{"PTL_BOR", uint64(eq.OpBOr), 6}, {"PTL_BAND", uint64(eq.OpBAnd), 7}, {"PTL_LXOR", uint64(eq.OpLXor), 8},
		{"PTL_BXOR", uint64(eq.OpBXor), 9}, {"PTL_SWAP", uint64(eq.OpSwap), 10},
		{"PTL_CSWAP", uint64(eq.OpCSwap), 11}, {"PTL_CSWAP_NE", uint64(eq.OpCSwapNE), 12},
		{"PTL_CSWAP_LE", uint64(eq.OpCSwapLE), 13}, {"PTL_CSWAP_LT", uint64(eq.OpCSwapLT), 14},
		{"PTL_CSWAP_GE", uint64(eq.OpCSwapGE), 15}, {"PTL_CSWAP_GT", uint64(eq.OpCSwapGT), 16},
		{"PTL_MSWAP", uint64(eq.OpMSwap), 17},

		{"PTL_INT8_T", uint64(eq.Int8), 0}, {"PTL_UINT8_T", uint64(eq.Uint8), 1},
		{"PTL_INT16_T", uint64(eq.Int16), 2}, {"PTL_UINT16_T", uint64(eq.Uint16), 3},
		{"PTL_INT32_T", uint64(eq.Int32), 4}, {"PTL_UINT32_T", uint64(eq.Uint32), 5},
		{"PTL_FLOAT", uint64(eq.Float), 6}, {"PTL_INT64_T", uint64(eq.Int64), 7},
		{"PTL_UINT64_T", uint64(eq.Uint64), 8}, {"PTL_DOUBLE", uint64(eq.Double), 9},
		{"PTL_FLOAT_COMPLEX", uint64(eq.FloatComplex), 10}, {"PTL_DOUBLE_COMPLEX", uint64(eq.DoubleComplex), 11},
		{"PTL_LONG_DOUBLE", uint64(eq.LongDouble), 12},
		{"PTL_LONG_DOUBLE_COMPLEX", uint64(eq.LongDoubleComplex), 13},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("%s = %#x, portals4.h says %#x", c.name, c.got, c.want)
		}
	}
}
