package tests

import (
	"fmt"
	"strings"

	"github.com/goportals/goportals/eq"
	"github.com/goportals/goportals/me"
	"github.com/goportals/goportals/portals"
)

// The symbol tables of the script vocabulary: every enumeration and option word the
// reference interpreter knows, mapped to the Go API's values.
//
// A word an attribute's table lacks reads as the reference's harness reads it: its
// parsers end every table with strtol(word, NULL, 0), so an unknown word is its
// leading number, else 0 (atom_op="XOR" is PTL_MIN), and in an option mask it
// replaces the mask and ends it (the words after it are ignored). The parsers
// return such a word as an *unknownSymbol beside the value; the runner reports each
// one before a test runs (Script.UnknownSymbols) and fails the test in strict mode.
// The tables compare exactly, as the reference's strcmp does: "sum" or "PTL_SUM" is
// unknown.

// unknownSymbol is a word that is neither in its attribute's table nor a number.
type unknownSymbol struct {
	word  string
	value int64 // what strtol makes of it
	mask  bool  // the word ends an option mask, whose value it becomes
}

// describe says how the word reads, for a warning about attribute attr="val".
func (u *unknownSymbol) describe(attr, val string) string {
	if u.mask {
		return fmt.Sprintf("unknown symbol %q in %s=%q: the mask reads as %d and ignores the words after it (the reference harness's strtol fallback)",
			u.word, attr, val, u.value)
	}
	return fmt.Sprintf("unknown symbol %s=%q, read as %d (the reference harness's strtol fallback)", attr, u.word, u.value)
}

// strtolWord reads a word outside a symbol table as the reference harness does,
// strtol(word, NULL, 0): its leading number, else 0. It returns the unknown symbol
// too unless the whole word (white space aside) is a number.
func strtolWord(s string) (int64, *unknownSymbol) {
	v, n := strtoll(s)
	if n > 0 && strings.TrimSpace(s[n:]) == "" {
		return v, nil
	}
	return v, &unknownSymbol{word: s, value: v}
}

// refSpelling reports whether s is spelled as the reference's tables spell their
// words: upper case, no PTL_ prefix, no white space. The eq package's parsers also
// accept "sum" and "PTL_SUM", which the reference's exact comparisons do not know.
func refSpelling(s string) bool {
	return s != "" && s == strings.ToUpper(s) && !strings.HasPrefix(s, "PTL_") && !strings.ContainsAny(s, " \t\n\r")
}

// errInvalidRet is the expected return code the scripts write as ret="INVALID": a
// value no call returns.
const errInvalidRet = portals.Errno(-1)

// parseRet reads ret= and err=: a return code's name without PTL_, INVALID, or a
// number (the C int value of portals4.h, which the Go codes share).
func parseRet(s string) (portals.Errno, *unknownSymbol) {
	if s == "INVALID" {
		return errInvalidRet, nil
	}
	if refSpelling(s) {
		if e, ok := portals.ParseErrno(s); ok {
			return e, nil
		}
	}
	v, u := strtolWord(s)
	return portals.Errno(int32(v)), u // get_ret returns an int
}

// invalidU8 stands for the scripts' INVALID enumeration value (0xffffffff in C), which
// the Go API's 8-bit enumerations see as 0xff: outside every defined value.
const invalidU8 = 0xff

// enumWord reads a word that names no value of an enumeration whose Go values follow
// portals4.h (lists, search operations, ack requests, atomic operations and types,
// event kinds, NI failures): a number as strtol reads it, a value beyond the Go
// type reading as invalidU8.
func enumWord(s string) (uint8, *unknownSymbol) {
	v, u := strtolWord(s)
	if v < 0 || v > invalidU8 {
		return invalidU8, u
	}
	return uint8(v), u
}

func parseAtomOp(s string) (eq.AtomicOp, *unknownSymbol) {
	if s == "INVALID" {
		return invalidU8, nil
	}
	if refSpelling(s) {
		if v, err := eq.ParseAtomicOp(s); err == nil {
			return v, nil
		}
	}
	v, u := enumWord(s)
	return eq.AtomicOp(v), u
}

func parseAtomType(s string) (eq.AtomicType, *unknownSymbol) {
	if s == "INVALID" {
		return invalidU8, nil
	}
	if refSpelling(s) {
		if v, err := eq.ParseAtomicType(s); err == nil {
			return v, nil
		}
	}
	v, u := enumWord(s)
	return eq.AtomicType(v), u
}

func parseList(s string) (me.List, *unknownSymbol) {
	switch s {
	case "PRIORITY":
		return me.ListPriority, nil
	case "OVERFLOW":
		return me.ListOverflow, nil
	case "INVALID":
		return invalidU8, nil
	}
	v, u := enumWord(s)
	return me.List(v), u
}

// parseEventList reads event_ptl_list, which the reference reads with the table of
// list=.
func parseEventList(s string) (eq.List, *unknownSymbol) {
	switch s {
	case "PRIORITY":
		return eq.PriorityList, nil
	case "OVERFLOW":
		return eq.OverflowList, nil
	case "INVALID":
		return invalidU8, nil
	}
	v, u := enumWord(s)
	return eq.List(v), u
}

func parseSearchOp(s string) (me.SearchOp, *unknownSymbol) {
	switch s {
	case "ONLY":
		return me.SearchOnly, nil
	case "DELETE":
		return me.SearchDelete, nil
	case "INVALID":
		return invalidU8, nil
	}
	v, u := enumWord(s)
	return me.SearchOp(v), u
}

func parseAckReq(s string) (portals.AckReq, *unknownSymbol) {
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
	v, u := enumWord(s)
	return portals.AckReq(v), u
}

func parseEventType(s string) (eq.EventKind, *unknownSymbol) {
	if s == "INVALID" {
		return invalidU8, nil
	}
	if refSpelling(s) {
		if v, err := eq.ParseEventKind(s); err == nil {
			return v, nil
		}
	}
	v, u := enumWord(s)
	return eq.EventKind(v), u
}

func parseNIFail(s string) (eq.NIFail, *unknownSymbol) {
	if s == "INVALID" {
		return invalidU8, nil
	}
	if refSpelling(s) {
		if v, err := eq.ParseNIFail(s); err == nil {
			return v, nil
		}
	}
	v, u := enumWord(s)
	return eq.NIFail(v), u
}

// parseMask reads a space-separated list of option words, as the reference does:
// each known word adds its bit, INVALID sets every bit outside all (the option mask
// of the call), and any other word — a number or an unknown symbol — replaces the
// mask with what strtol makes of it and ends the list. A nonzero number has no Go
// counterpart, since goportals' option bits are its own: the test is skipped.
func parseMask(kind, s string, words map[string]uint32, all uint32) (uint32, *unknownSymbol, error) {
	var v uint32
	for _, w := range strings.Fields(s) {
		if w == "INVALID" {
			v = ^all
			continue
		}
		if b, ok := words[w]; ok {
			v |= b
			continue
		}
		n, u := strtolWord(w)
		if u != nil {
			u.mask = true
		}
		if n != 0 {
			return 0, u, errSkipf("numeric %s %q is a C bit mask with no Go counterpart", kind, w)
		}
		return 0, u, nil // no option bits: the same in every encoding
	}
	return v, nil, nil
}

// wordOrNumber classifies a value that is one of words, a $variable (which
// record.number reads) or a number; anything else is an unknown symbol, which
// reads as strtol makes of it.
func wordOrNumber(s string, words ...string) (int64, *unknownSymbol) {
	for _, w := range words {
		if s == w {
			return 0, nil
		}
	}
	if strings.HasPrefix(s, "$") {
		return 0, nil
	}
	return strtolWord(s)
}

// symbolAttrs are the attributes whose values come from a symbol table, each with
// what reports a value's unknown symbol. A desired_features or actual_features value
// is a mask of featureWords.
var symbolAttrs = func() map[string]func(string) *unknownSymbol {
	m := map[string]func(string) *unknownSymbol{}
	add := func(f func(string) *unknownSymbol, names ...string) {
		for _, n := range names {
			m[n] = f
		}
	}
	add(func(s string) *unknownSymbol { _, u := parseRet(s); return u }, "ret", "err")
	add(func(s string) *unknownSymbol { _, u := parseAtomOp(s); return u }, "atom_op", "event_atom_op")
	add(func(s string) *unknownSymbol { _, u := parseAtomType(s); return u }, "atom_type", "type", "event_atom_type")
	add(func(s string) *unknownSymbol { _, u := parseList(s); return u }, "list")
	add(func(s string) *unknownSymbol { _, u := parseEventList(s); return u }, "event_ptl_list")
	add(func(s string) *unknownSymbol { _, u := parseSearchOp(s); return u }, "search_op")
	add(func(s string) *unknownSymbol { _, u := parseAckReq(s); return u }, "ack_req")
	add(func(s string) *unknownSymbol { _, u := parseEventType(s); return u }, "event_type")
	add(func(s string) *unknownSymbol { _, u := parseNIFail(s); return u }, "event_ni_fail")
	mask := func(kind string, words map[string]uint32, all uint32) func(string) *unknownSymbol {
		return func(s string) *unknownSymbol { _, u, _ := parseMask(kind, s, words, all); return u }
	}
	m["ni_opt"] = mask("ni_opt", niOptWords, niOptAll)
	m["pt_opt"] = mask("pt_opt", ptOptWords, ptOptAll)
	m["md_opt"] = mask("md_opt", mdOptWords, mdOptAll)
	m["le_opt"] = mask("le_opt", leOptWords, leOptAll)
	m["me_opt"] = mask("me_opt", meOptWords, meOptAll)
	add(mask("features", featureWords, featureAll), "desired_features", "actual_features")
	word := func(words ...string) func(string) *unknownSymbol {
		return func(s string) *unknownSymbol { _, u := wordOrNumber(s, words...); return u }
	}
	m["pt_index"] = word(ptIndexWords...)
	m["uid"] = word("ANY")
	add(word("NULL", "BAD"), "user_ptr", "event_user_ptr")
	m["target_id"] = func(s string) *unknownSymbol {
		if strings.Contains(s, ":") {
			return nil // nid:pid, two numbers
		}
		_, u := wordOrNumber(s, "SELF")
		return u
	}
	return m
}()

// A Warning is a construct of a script that runs, but perhaps not as its author
// meant: an unknown symbol, read as the reference harness reads it.
type Warning struct {
	Path string
	Line int
	Msg  string
}

// String formats the warning as "file:line: message".
func (w Warning) String() string { return fmt.Sprintf("%s:%d: %s", w.Path, w.Line, w.Msg) }

// UnknownSymbols lists the attribute values of the script that name no symbol of
// their attribute's table and are not numbers, in document order. Each reads as the
// reference harness reads it (strtol: its leading number, else 0); a script author
// most likely meant another word ("XOR" for BXOR, "UINIT" for UINT8).
func (s *Script) UnknownSymbols() []Warning {
	var ws []Warning
	var walk func(n *Node)
	walk = func(n *Node) {
		if n.Name != "ifdef" { // ifdef names features, not symbols
			for _, a := range n.Attrs {
				f := symbolAttrs[a.Name.Local]
				if f == nil {
					continue
				}
				if u := f(a.Value); u != nil {
					ws = append(ws, Warning{Path: s.Path, Line: n.Line, Msg: u.describe(a.Name.Local, a.Value)})
				}
			}
		}
		for _, c := range n.Children {
			walk(c)
		}
	}
	walk(s.Root)
	return ws
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
