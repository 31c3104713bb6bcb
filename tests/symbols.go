package tests

import (
	"fmt"
	"strings"

	"github.com/goportals/goportals/eq"
	"github.com/goportals/goportals/me"
	"github.com/goportals/goportals/portals"
)

// The symbol tables of the script vocabulary: every enumeration and option word the
// reference interpreter knows, mapped to the Go API's values. An unknown word is an
// error (the reference would silently read it as 0).

// errInvalidRet is the expected return code the scripts write as ret="INVALID": a
// value no call returns.
const errInvalidRet = portals.Errno(-1)

func parseRet(s string) (portals.Errno, error) {
	if s == "INVALID" {
		return errInvalidRet, nil
	}
	if e, ok := portals.ParseErrno(s); ok {
		return e, nil
	}
	return 0, fmt.Errorf("unknown return code %q", s)
}

// invalidU8 stands for the scripts' INVALID enumeration value (0xffffffff in C), which
// the Go API's 8-bit enumerations see as 0xff: outside every defined value.
const invalidU8 = 0xff

func parseAtomOp(s string) (eq.AtomicOp, error) {
	if v, ok := enumNumber(s); ok {
		return eq.AtomicOp(v), nil
	}
	if s == "INVALID" {
		return invalidU8, nil
	}
	if v, err := eq.ParseAtomicOp(s); err == nil {
		return v, nil
	}
	return 0, fmt.Errorf("unknown atomic operation %q", s)
}

func parseAtomType(s string) (eq.AtomicType, error) {
	if v, ok := enumNumber(s); ok {
		return eq.AtomicType(v), nil
	}
	if s == "INVALID" {
		return invalidU8, nil
	}
	if v, err := eq.ParseAtomicType(s); err == nil {
		return v, nil
	}
	return 0, fmt.Errorf("unknown atomic type %q", s)
}

// enumNumber reads a number written for an enumeration whose Go values follow
// portals4.h (lists, search operations, atomic operations and types, event kinds);
// a value beyond the Go type reads as invalidU8.
func enumNumber(s string) (uint8, bool) {
	v, n := strtoull(s)
	if n == 0 || n != len(s) {
		return 0, false
	}
	if v > invalidU8 {
		return invalidU8, true
	}
	return uint8(v), true
}

func parseList(s string) (me.List, error) {
	if v, ok := enumNumber(s); ok {
		return me.List(v), nil
	}
	switch s {
	case "PRIORITY":
		return me.ListPriority, nil
	case "OVERFLOW":
		return me.ListOverflow, nil
	case "INVALID":
		return invalidU8, nil
	}
	return 0, fmt.Errorf("unknown list %q", s)
}

func parseEventList(s string) (eq.List, error) {
	if s == "INVALID" {
		return invalidU8, nil
	}
	v, err := eq.ParseList(s)
	if err != nil {
		return 0, fmt.Errorf("unknown list %q", s)
	}
	return v, nil
}

func parseSearchOp(s string) (me.SearchOp, error) {
	if v, ok := enumNumber(s); ok {
		return me.SearchOp(v), nil
	}
	switch s {
	case "ONLY":
		return me.SearchOnly, nil
	case "DELETE":
		return me.SearchDelete, nil
	case "INVALID":
		return invalidU8, nil
	}
	return 0, fmt.Errorf("unknown search operation %q", s)
}

func parseAckReq(s string) (portals.AckReq, error) {
	switch s {
	case "ACK":
		return portals.AckReqFull, nil
	case "NO_ACK":
		return portals.NoAckReq, nil
	case "CT_ACK":
		return portals.CTAckReq, nil
	case "OC_ACK":
		return portals.OCAckReq, nil
	case "INVALID":
		return invalidU8, nil
	}
	return 0, fmt.Errorf("unknown ack request %q", s)
}

func parseEventType(s string) (eq.EventKind, error) {
	if v, ok := enumNumber(s); ok {
		return eq.EventKind(v), nil
	}
	if s == "INVALID" {
		return invalidU8, nil
	}
	v, err := eq.ParseEventKind(s)
	if err != nil {
		return 0, fmt.Errorf("unknown event type %q", s)
	}
	return v, nil
}

func parseNIFail(s string) (eq.NIFail, error) {
	if s == "INVALID" {
		return invalidU8, nil
	}
	v, err := eq.ParseNIFail(s)
	if err != nil {
		return 0, fmt.Errorf("unknown ni_fail %q", s)
	}
	return v, nil
}

// parseMask reads a space-separated list of option words. INVALID sets every bit
// outside all (the option mask of the call); a number has no Go counterpart, since
// goportals' option bits are its own.
func parseMask(kind, s string, words map[string]uint32, all uint32) (uint32, error) {
	var v uint32
	for _, w := range strings.Fields(s) {
		if w == "INVALID" {
			v = ^all
			continue
		}
		b, ok := words[w]
		if !ok {
			if v, n := strtoull(w); n == len(w) {
				if v == 0 {
					continue // no option bits: the same in every encoding
				}
				return 0, errSkipf("numeric %s %q is a C bit mask with no Go counterpart", kind, w)
			}
			return 0, fmt.Errorf("unknown %s word %q", kind, w)
		}
		v |= b
	}
	return v, nil
}

var niOptWords = map[string]uint32{
	"MATCH": uint32(portals.NIMatching), "NO_MATCH": uint32(portals.NINoMatching),
	"LOGICAL": uint32(portals.NILogical), "PHYSICAL": uint32(portals.NIPhysical),
}

const niOptAll = uint32(portals.NIMatching | portals.NINoMatching | portals.NILogical | portals.NIPhysical)

var ptOptWords = map[string]uint32{
	"ONLY_USE_ONCE": uint32(portals.PTOnlyUseOnce), "ONLY_TRUNCATE": uint32(portals.PTOnlyTruncate),
	"FLOW": uint32(portals.PTFlowCtrl),
}

const ptOptAll = uint32(portals.PTOnlyUseOnce | portals.PTOnlyTruncate | portals.PTFlowCtrl | portals.PTMatchUnordered)

// optIOVEC is the scripts' IOVEC option: in Go the iovecs go in the spec's Iovecs
// field, so the interpreter keeps this bit for itself (it is above every option bit of
// the API).
const optIOVEC = uint32(1) << 31

var mdOptWords = map[string]uint32{
	"IOVEC":           optIOVEC,
	"SUCCESS_DISABLE": uint32(portals.MDEventSuccessDisable), "CT_SEND": uint32(portals.MDEventCTSend),
	"CT_REPLY": uint32(portals.MDEventCTReply), "CT_ACK": uint32(portals.MDEventCTAck),
	"CT_BYTES": uint32(portals.MDEventCTBytes), "UNORDERED": uint32(portals.MDUnordered),
	"VOLATILE": uint32(portals.MDVolatile),
}

const mdOptAll = uint32(portals.MDEventSuccessDisable|portals.MDEventCTSend|portals.MDEventCTReply|
	portals.MDEventCTAck|portals.MDEventCTBytes|portals.MDUnordered|portals.MDEventSendDisable|
	portals.MDVolatile) | optIOVEC

var leOptWords = map[string]uint32{
	"IOVEC":  optIOVEC,
	"OP_PUT": uint32(me.OpPut), "OP_GET": uint32(me.OpGet), "USE_ONCE": uint32(me.UseOnce),
	"SUCCESS_DISABLE": uint32(me.EventSuccessDisable), "IS_ACCESSIBLE": uint32(me.IsAccessible),
	"EVENT_LINK_DISABLE": uint32(me.EventLinkDisable), "COMM_DISABLE": uint32(me.EventCommDisable),
	"FLOW_DISABLE": uint32(me.EventFlowCtrlDisable), "OVER_DISABLE": uint32(me.EventOverDisable),
	"UNLINK_DISABLE": uint32(me.EventUnlinkDisable), "CT_COMM": uint32(me.EventCTComm),
	"CT_OVERFLOW": uint32(me.EventCTOverflow), "CT_BYTES": uint32(me.EventCTBytes),
	// Portals 4.1 options the reference's parser lacks; the Go API has them.
	"ACK_DISABLE": uint32(me.AckDisable), "UNEXPECTED_HDR_DISABLE": uint32(me.UnexpectedHdrDisable),
}

var meOptWords = func() map[string]uint32 {
	m := map[string]uint32{"MANAGE_LOCAL": uint32(me.ManageLocal), "NO_TRUNCATE": uint32(me.NoTruncate),
		"MAY_ALIGN": uint32(me.MayAlign)}
	for k, v := range leOptWords {
		m[k] = v
	}
	return m
}()

// leOptAll and meOptAll are the option masks of LEAppend and MEAppend: every option
// bit the Go API defines.
var leOptAll, meOptAll = func() (uint32, uint32) {
	all := uint32(me.OpPut | me.OpGet | me.UseOnce | me.AckDisable | me.UnexpectedHdrDisable | me.IsAccessible |
		me.EventLinkDisable | me.EventCommDisable | me.EventFlowCtrlDisable | me.EventSuccessDisable |
		me.EventOverDisable | me.EventUnlinkDisable | me.EventCTComm | me.EventCTOverflow | me.EventCTBytes)
	meAll := all | uint32(me.ManageLocal|me.NoTruncate|me.MayAlign)
	return all | optIOVEC, meAll | optIOVEC
}()

var featureWords = map[string]uint32{
	"TARGET_BIND_INACCESSIBLE": portals.FeatureTargetBindInaccessible,
	"TOTAL_DATA_ORDERING":      portals.FeatureTotalDataOrdering,
	"COHERENT_ATOMICS":         portals.FeatureCoherentAtomics,
}

const featureAll = uint32(portals.FeatureTargetBindInaccessible | portals.FeatureTotalDataOrdering |
	portals.FeatureCoherentAtomics)
