package tests

import (
	"fmt"
	"strings"

	"github.com/goportals/goportals/eq"
	"github.com/goportals/goportals/portals"
)

// check runs a check element: every attribute compares a field of the record (the
// last event, counter value, limits, id, which) or the record's buffer with the value
// given. The first mismatch fails the test.
func (in *interp) check(r *record, n *Node) error {
	bad, err := in.compare(r, n)
	if err != nil {
		return atLine(n, err)
	}
	if bad != "" {
		return failf(n, "%s", bad)
	}
	in.tracef(n, "ok")
	return nil
}

// test evaluates an if element's condition (every comparison holds).
func (in *interp) test(r *record, n *Node) (bool, error) {
	bad, err := in.compare(r, n)
	if err != nil {
		return false, atLine(n, err)
	}
	return bad == "", nil
}

// rankOf and nidOf read a process id as the C union does: rank and nid share storage,
// and the engine fills the form its NI uses.
func rankOf(p portals.ProcessID, logical bool) uint64 {
	if logical {
		return uint64(p.Rank)
	}
	return uint64(p.NID)
}

// compare returns a description of the first attribute that does not hold, or "".
func (in *interp) compare(r *record, n *Node) (string, error) {
	// length, offset and type apply to the buffer comparisons wherever they are
	// written (the corpus orders attributes alphabetically).
	length, offset := uint64(1), uint64(0)
	typ := eq.Uint8
	for _, a := range n.Attrs {
		var err error
		switch a.Name.Local {
		case "length":
			length, err = r.number(a.Value)
		case "offset":
			offset, err = r.number(a.Value)
		case "type":
			typ, _ = parseAtomType(a.Value)
		}
		if err != nil {
			return "", fmt.Errorf("%s=%q: %w", a.Name.Local, a.Value, err)
		}
	}
	ev := &r.event
	for _, a := range n.Attrs {
		name, val := a.Name.Local, a.Value
		fail := func(got, want any) string {
			return fmt.Sprintf("%s: got %v, want %v (%s)", name, got, want, val)
		}
		numEq := func(got uint64) (string, error) {
			want, err := r.number(val)
			if err != nil {
				return "", fmt.Errorf("<%s> %s=%q: %w", n.Name, name, val, err)
			}
			if got != want {
				return fail(got, want), nil
			}
			return "", nil
		}
		var bad string
		var err error
		switch name {
		case "err":
			var want portals.Errno
			if want, _ = parseRet(val); want != r.err {
				bad = fail(errnoName(r.err), errnoName(want))
			}
		case "thread_id":
			bad, err = numEq(uint64(r.threadID))
		case "rank":
			bad, err = numEq(rankOf(r.id, r.idLogical))
		case "which":
			bad, err = numEq(uint64(uint32(r.which)))
		case "event_type":
			var want eq.EventKind
			if want, _ = parseEventType(val); ev.Type != want {
				bad = fail(ev.Type, want)
			}
		case "event_nid":
			bad, err = numEq(uint64(ev.Initiator.NID))
		case "event_pid":
			bad, err = numEq(uint64(ev.Initiator.PID))
		case "event_rank":
			bad, err = numEq(uint64(ev.Initiator.Rank))
		case "event_pt_index":
			bad, err = numEq(uint64(ev.PTIndex))
		case "event_uid":
			bad, err = numEq(uint64(ev.UID))
		case "event_match":
			bad, err = numEq(ev.MatchBits)
		case "event_rlength":
			bad, err = numEq(ev.RLength)
		case "event_mlength":
			bad, err = numEq(ev.MLength)
		case "event_offset":
			bad, err = numEq(ev.RemoteOffset)
		case "event_start":
			err = errSkipf("event_start compares a C address; the Go event's Start is an offset")
		case "event_user_ptr":
			// As the reference's get_ptr: NULL, BAD, else strtoll.
			var want int64
			switch val {
			case "NULL":
			case "BAD":
				want = 0x0123
			default:
				want, _ = strtolWord(val)
			}
			if ev.UserPtr != uint64(want) {
				bad = fail(ev.UserPtr, uint64(want))
			}
		case "event_hdr_data":
			bad, err = numEq(ev.HdrData)
		case "event_ni_fail":
			var want eq.NIFail
			if want, _ = parseNIFail(val); ev.NIFail != want {
				bad = fail(ev.NIFail, want)
			}
		case "event_atom_op":
			var want eq.AtomicOp
			if want, _ = parseAtomOp(val); ev.AtomicOp != want {
				bad = fail(ev.AtomicOp, want)
			}
		case "event_atom_type":
			var want eq.AtomicType
			if want, _ = parseAtomType(val); ev.AtomicType != want {
				bad = fail(ev.AtomicType, want)
			}
		case "event_ptl_list":
			var want eq.List
			if want, _ = parseEventList(val); ev.List != want {
				bad = fail(ev.List, want)
			}
		case "ct_event_success":
			bad, err = numEq(r.ctEvent.Success)
		case "ct_event_failure":
			bad, err = numEq(r.ctEvent.Failure)
		case "length", "offset", "type":
		case "md_data", "le_data", "me_data":
			bad, err = checkBuffer(r.buf, name, val, typ, offset, length)
		default:
			if l, ok := strings.CutPrefix(name, "actual_"); ok {
				bad, err = checkLimit(r, l, val)
				break
			}
			err = fmt.Errorf("<%s>: attribute %s cannot be checked", n.Name, name)
		}
		if err != nil {
			if _, ok := err.(*skipError); ok {
				return "", err
			}
			return "", fmt.Errorf("%s=%q: %w", name, val, err)
		}
		if bad != "" {
			return bad, nil
		}
	}
	return "", nil
}

func checkBuffer(buf []byte, name, val string, typ eq.AtomicType, offset, length uint64) (string, error) {
	want, err := parseDatum(typ, val)
	if err != nil {
		return "", err
	}
	if offset > uint64(len(buf)) || length > uint64(len(buf))-offset {
		return fmt.Sprintf("%s: [%d, +%d) is outside the %d-byte buffer", name, offset, length, len(buf)), nil
	}
	if d := compareData(buf[offset:offset+length], typ, want); d != "" {
		return fmt.Sprintf("%s=%s (%v) at offset %d length %d: %s", name, val, typ, offset, length, d), nil
	}
	return "", nil
}

func checkLimit(r *record, name, val string) (string, error) {
	f, err := limitField(&r.actual, name)
	if err != nil {
		return "", err
	}
	var got, want uint64
	switch p := f.(type) {
	case *int:
		got = uint64(*p)
	case *uint64:
		got = *p
	case *uint32:
		got = uint64(*p)
		w, _, err := parseMask("features", val, featureWords, featureAll)
		if err != nil {
			return "", err
		}
		if got != uint64(w) {
			return fmt.Sprintf("actual_%s: got %#x, want %#x", name, got, w), nil
		}
		return "", nil
	}
	if want, err = r.number(val); err != nil {
		return "", err
	}
	if got != want {
		return fmt.Sprintf("actual_%s: got %d, want %d", name, got, want), nil
	}
	return "", nil
}
