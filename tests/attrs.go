package tests

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/goportals/goportals/portals"
)

// number reads a numeric attribute: $count, $thread_id, $actual.max_pt_index, or a
// number in strtoull form.
func (r *record) number(s string) (uint64, error) {
	if strings.HasPrefix(s, "$") {
		switch strings.TrimPrefix(s, "$") {
		case "count":
			return uint64(r.count), nil
		case "thread_id":
			return uint64(r.threadID), nil
		case "actual.max_pt_index":
			return uint64(r.actual.MaxPTIndex), nil
		}
		return 0, fmt.Errorf("unknown variable %s", s)
	}
	return parseNumber(s)
}

// handleValue reads a handle attribute: INVALID, CT_NONE, EQ_NONE, kind[n] from an
// object stack, or a raw number.
func (r *record) handleValue(s string) (handle, error) {
	switch s {
	case "INVALID":
		return invalidHandle, nil
	case "CT_NONE", "EQ_NONE":
		return handle{}, nil
	}
	if i := strings.IndexByte(s, '['); i > 0 && strings.HasSuffix(s, "]") {
		n, err := strconv.Atoi(s[i+1 : len(s)-1])
		if err != nil || n < 0 || n >= stackSize {
			return handle{}, fmt.Errorf("bad handle index %q", s)
		}
		var st *stack
		switch s[:i] {
		case "ni":
			st = &r.nis
		case "md":
			st = &r.mds
		case "le":
			st = &r.les
		case "me":
			st = &r.mes
		case "eq":
			st = &r.eqs
		case "ct":
			st = &r.cts
		case "pt":
			return handle{}, errSkipf("a portal index used as a handle (%s) has no Go counterpart", s)
		default:
			return handle{}, fmt.Errorf("unknown handle kind in %q", s)
		}
		if n >= st.next {
			// C reads whatever the stack slot holds; here it is a stale or empty slot.
			return handle{obj: st.h[n].obj, invalid: st.h[n].obj == nil && st.h[n].raw == ""}, nil
		}
		return st.h[n], nil
	}
	if _, err := parseNumber(s); err != nil {
		return handle{}, fmt.Errorf("bad handle %q", s)
	}
	return handle{raw: s}, nil
}

// ptIndexWords are the words of pt_index.
var ptIndexWords = []string{"MIN", "MAX", "BIG", "ANY", "INVALID"}

// ptIndexValue reads pt_index: MIN, MAX, BIG, ANY, INVALID, a $variable or a
// number; another word reads as strtol makes of it (see unknownSymbol).
func (r *record) ptIndexValue(s string) (portals.PTIndex, error) {
	switch s {
	case "MIN":
		return 0, nil
	case "MAX":
		return portals.PTIndex(r.actual.MaxPTIndex), nil
	case "BIG":
		return portals.PTIndex(r.actual.MaxPTIndex + 1), nil
	case "ANY":
		return portals.PTAny, nil
	case "INVALID":
		return 0x7fffffff, nil
	}
	v, err := r.wordNumber(s)
	return portals.PTIndex(v), err
}

// wordNumber reads a number attribute that also takes words, once the words are
// handled: a $variable or a number, and any other word as strtol makes of it, as the
// reference harness does (see unknownSymbol).
func (r *record) wordNumber(s string) (uint64, error) {
	if strings.HasPrefix(s, "$") {
		return r.number(s)
	}
	v, _ := strtolWord(s)
	return uint64(v), nil
}

// limitField returns the field of l that a desired_/actual_ suffix names.
func limitField(l *portals.Limits, name string) (any, error) {
	switch name {
	case "max_entries":
		return &l.MaxEntries, nil
	case "max_unexpected_headers", "max_over":
		return &l.MaxUnexpectedHeaders, nil
	case "max_mds":
		return &l.MaxMDs, nil
	case "max_eqs":
		return &l.MaxEQs, nil
	case "max_cts":
		return &l.MaxCTs, nil
	case "max_pt_index":
		return &l.MaxPTIndex, nil
	case "max_iovecs":
		return &l.MaxIovecs, nil
	case "max_list_size":
		return &l.MaxListSize, nil
	case "max_triggered_ops":
		return &l.MaxTriggeredOps, nil
	case "max_msg_size":
		return &l.MaxMsgSize, nil
	case "max_atomic_size":
		return &l.MaxAtomicSize, nil
	case "max_fetch_atomic_size":
		return &l.MaxFetchAtomicSize, nil
	case "max_waw_ordered_size":
		return &l.MaxWAWOrderedSize, nil
	case "max_war_ordered_size":
		return &l.MaxWAROrderedSize, nil
	case "max_volatile_size":
		return &l.MaxVolatileSize, nil
	case "features":
		return &l.Features, nil
	}
	return nil, fmt.Errorf("unknown limit %q", name)
}

// applyAttrs sets the record from an element's attributes in document order (the
// reference's get_attr), then fills the buffer for md_data/le_data/me_data.
//
// The values of md_data, le_data, me_data and operand are read after every other
// attribute, with the element's final type: the corpus writes attributes in
// alphabetical order (md_data before type) and expects the data in that type.
func (in *interp) applyAttrs(r *record, n *Node) error {
	var fillData []datum
	for pass := 0; pass < 2; pass++ {
		for _, a := range n.Attrs {
			name, val := a.Name.Local, a.Value
			if dataAttr(name) != (pass == 1) {
				continue
			}
			err := in.applyAttr(r, name, val, &fillData)
			if err != nil {
				return atLine(n, fmt.Errorf("<%s> %s=%q: %w", n.Name, name, val, err))
			}
		}
	}
	for _, d := range fillData {
		fill(r.buf, r.typ, d)
	}
	return nil
}

func (in *interp) applyAttr(r *record, name, val string, fillData *[]datum) error {
	num := func(dst *uint64) error {
		v, err := r.number(val)
		*dst = v
		return err
	}
	var err error
	switch name {
	case "version":
	case "ret":
		r.ret, _ = parseRet(val)
	case "ptr", "iov_base", "md_start", "le_start", "me_start", "which_ptr":
		return errSkipf("pointer argument %s=%q has no Go counterpart", name, val)
	case "count":
		var v uint64
		err = num(&v)
		r.count = int64(v)
	case "iface":
		var v uint64
		err = num(&v)
		r.iface = portals.Interface(v)
	case "ni_opt":
		r.niOpt, _, err = parseMask("ni_opt", val, niOptWords, niOptAll)
	case "pid":
		var v uint64
		err = num(&v)
		r.pid = portals.PID(v)
	case "uid":
		if val == "ANY" {
			r.uid = portals.UIDAny
		} else {
			var v uint64
			v, err = r.wordNumber(val)
			r.uid = portals.UID(v)
		}
	case "ni_handle":
		r.niH, err = r.handleValue(val)
	case "reg":
		var v uint64
		err = num(&v)
		r.reg = int64(v)
	case "status":
		return errSkipf("status= (a status register value to set) has no Go counterpart")
	case "handle":
		r.anyH, err = r.handleValue(val)
	case "pt_opt":
		r.ptOpt, _, err = parseMask("pt_opt", val, ptOptWords, ptOptAll)
	case "pt_index":
		r.ptIndex, err = r.ptIndexValue(val)
	case "list":
		r.list, _ = parseList(val)
	case "iovec_len":
		err = num(&r.iovecLen)
	case "md_length":
		err = num(&r.md.length)
		r.md.lengthSet = true
	case "md_opt":
		r.md.opts, _, err = parseMask("md_opt", val, mdOptWords, mdOptAll)
	case "md_handle":
		r.mdH, err = r.handleValue(val)
	case "md_data", "le_data", "me_data":
		var d datum
		d, err = parseDatum(r.typ, val)
		*fillData = append(*fillData, d)
	case "le_length":
		err = num(&r.le.length)
		r.le.lengthSet = true
	case "le_opt":
		r.le.opts, _, err = parseMask("le_opt", val, leOptWords, leOptAll)
	case "search_op":
		r.search, _ = parseSearchOp(val)
	case "me_length":
		err = num(&r.me.length)
		r.me.lengthSet = true
	case "me_match":
		err = num(&r.meMatch)
	case "me_ignore":
		err = num(&r.meIgnore)
	case "me_opt":
		r.me.opts, _, err = parseMask("me_opt", val, meOptWords, meOptAll)
	case "me_min_free":
		err = num(&r.minFree)
	case "time":
		var v uint64
		err = num(&v)
		r.timeout = int64(v)
	case "eq_count":
		var v uint64
		err = num(&v)
		r.eqCount = int64(v)
	case "eq_handle":
		r.eqH, err = r.handleValue(val)
	case "ct_handle":
		r.ctH, err = r.handleValue(val)
	case "trig_ct_handle":
		r.trigCTH, err = r.handleValue(val)
	case "ct_event_success":
		err = num(&r.ctEvent.Success)
	case "ct_event_failure":
		err = num(&r.ctEvent.Failure)
	case "ct_test":
		err = num(&r.ctTest)
	case "atom_op":
		r.atomOp, _ = parseAtomOp(val)
	case "atom_type", "type":
		r.typ, _ = parseAtomType(val)
	case "get_md_handle":
		r.getMDH, err = r.handleValue(val)
	case "put_md_handle":
		r.putMDH, err = r.handleValue(val)
	case "user_ptr":
		switch val {
		case "NULL":
			r.userPtr = 0
		case "BAD":
			r.userPtr = 0x0123
		default:
			v, _ := strtolWord(val) // strtoll, as the reference's get_ptr
			r.userPtr = uint64(v)
		}
	case "length":
		err = num(&r.length)
	case "operand":
		r.operand, err = parseDatum(r.typ, val)
	case "match":
		err = num(&r.match)
	case "hdr_data":
		err = num(&r.hdrData)
	case "loc_offset":
		err = num(&r.locOffset)
	case "loc_get_offset":
		err = num(&r.locGetOffset)
	case "loc_put_offset":
		err = num(&r.locPutOffset)
	case "rem_offset":
		err = num(&r.remOffset)
	case "ack_req":
		r.ackReq, _ = parseAckReq(val)
	case "threshold":
		err = num(&r.threshold)
	case "handle1":
		r.handle1, err = r.handleValue(val)
	case "handle2":
		r.handle2, err = r.handleValue(val)
	case "event_type":
		r.event.Type, _ = parseEventType(val)
	case "target_id":
		r.target, err = in.targetID(r, val)
	case "get_map_size":
		err = num(&r.getMapSize)
	default:
		if l, ok := strings.CutPrefix(name, "desired_"); ok {
			return setLimit(r, &r.desired, l, val)
		}
		return fmt.Errorf("attribute %s does not set a parameter", name)
	}
	return err
}

func setLimit(r *record, lim *portals.Limits, name, val string) error {
	f, err := limitField(lim, name)
	if err != nil {
		return err
	}
	if name == "features" {
		v, _, err := parseMask("features", val, featureWords, featureAll)
		*f.(*uint32) = v
		return err
	}
	v, err := r.number(val)
	switch p := f.(type) {
	case *int:
		*p = int(int32(v)) // the C fields are int
	case *uint64:
		*p = v
	}
	return err
}

// dataAttr reports whether an attribute holds a value of the element's datatype.
func dataAttr(name string) bool {
	return name == "md_data" || name == "le_data" || name == "me_data" || name == "operand"
}

// targetID reads target_id: SELF (the id of the record's NI), "nid:pid", or a rank
// (another word reads as strtol makes of it, see unknownSymbol).
func (in *interp) targetID(r *record, s string) (portals.ProcessID, error) {
	if s == "SELF" {
		// As the reference: when PtlGetId fails the id stays zero and the call that
		// uses it reports the problem.
		ni, err := r.niH.ni()
		if err != nil {
			return portals.ProcessID{}, nil
		}
		id, err := in.callID(ni)
		if err != nil {
			return portals.ProcessID{}, nil
		}
		return id, nil
	}
	// ptl_process_t is a union: the rank shares its storage with the NID.
	if nid, pid, ok := strings.Cut(s, ":"); ok {
		a, err := r.number(nid)
		if err != nil {
			return portals.ProcessID{}, err
		}
		b, err := r.number(pid)
		return portals.ProcessID{NID: portals.NID(a), PID: portals.PID(b), Rank: portals.Rank(a)}, err
	}
	v, err := r.wordNumber(s)
	return portals.ProcessID{Rank: portals.Rank(v), NID: portals.NID(v)}, err
}
