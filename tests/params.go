package tests

import (
	"github.com/goportals/goportals/eq"
	"github.com/goportals/goportals/me"
	"github.com/goportals/goportals/portals"
)

// Interpreter defaults, from the reference interpreter's run.c.
const (
	stackSize      = 20    // handles each object stack holds (md[0] .. md[19])
	iovSize        = 32    // iovecs of an IOVEC descriptor or entry
	iovecLength    = 1024  // bytes per iovec
	defaultMsgSize = 32768 // desired max_msg_size: iovSize*iovecLength
	defaultTimeout = 10    // ms, the time= of eq_poll and ct_poll
	defaultEQCount = 10
)

// handle is a script's handle value: a Go handle (a *portals.NI, *MD, *ME, *EQ or
// *CT, nil for none), PTL_INVALID_HANDLE, or a raw number written in the script.
type handle struct {
	obj     any
	invalid bool
	raw     string
}

var invalidHandle = handle{invalid: true}

func (h handle) isNumber() error {
	if h.raw != "" {
		return errSkipf("numeric handle %s has no Go counterpart (handles are typed pointers)", h.raw)
	}
	return nil
}

func (h handle) ni() (*portals.NI, error) {
	if err := h.isNumber(); err != nil {
		return nil, err
	}
	if h.obj == nil {
		return nil, nil
	}
	v, ok := h.obj.(*portals.NI)
	if !ok {
		return nil, errSkipf("a %T passed as an NI handle has no Go counterpart", h.obj)
	}
	return v, nil
}

// The Go counterpart of PTL_INVALID_HANDLE is a zero-value handle: a pointer to an
// object the API never returned, which every call refuses with ARG_INVALID (nil is
// PTL_EQ_NONE / PTL_CT_NONE, or a handle never set). An invalid NI handle is a nil
// *NI.

func (h handle) md() (*portals.MD, error) {
	if err := h.isNumber(); err != nil {
		return nil, err
	}
	if h.invalid {
		return &portals.MD{}, nil
	}
	if h.obj == nil {
		return nil, nil
	}
	v, ok := h.obj.(*portals.MD)
	if !ok {
		return nil, errSkipf("a %T passed as an MD handle has no Go counterpart", h.obj)
	}
	return v, nil
}

func (h handle) me() (*portals.ME, error) {
	if err := h.isNumber(); err != nil {
		return nil, err
	}
	if h.invalid {
		return &portals.ME{}, nil
	}
	if h.obj == nil {
		return nil, nil
	}
	v, ok := h.obj.(*portals.ME)
	if !ok {
		return nil, errSkipf("a %T passed as an ME/LE handle has no Go counterpart", h.obj)
	}
	return v, nil
}

func (h handle) eq() (*portals.EQ, error) {
	if err := h.isNumber(); err != nil {
		return nil, err
	}
	if h.invalid {
		return &portals.EQ{}, nil
	}
	if h.obj == nil {
		return nil, nil
	}
	v, ok := h.obj.(*portals.EQ)
	if !ok {
		return nil, errSkipf("a %T passed as an EQ handle has no Go counterpart", h.obj)
	}
	return v, nil
}

func (h handle) ct() (*portals.CT, error) {
	if err := h.isNumber(); err != nil {
		return nil, err
	}
	if h.invalid {
		return &portals.CT{}, nil
	}
	if h.obj == nil {
		return nil, nil
	}
	v, ok := h.obj.(*portals.CT)
	if !ok {
		return nil, errSkipf("a %T passed as a CT handle has no Go counterpart", h.obj)
	}
	return v, nil
}

// stack is one object stack: the handles an element's ancestors allocated, md[0]
// the outermost. It is an array so that a record copy copies it, as in C.
type stack struct {
	h    [stackSize]handle
	next int
}

func (s *stack) push(h handle) {
	if s.next < stackSize {
		s.h[s.next] = h
		s.next++
	}
}

func (s *stack) pop() {
	if s.next > 0 {
		s.next--
		s.h[s.next] = handle{}
	}
}

// entrySpec is the part of the record that describes an MD, LE or ME.
type entrySpec struct {
	length    uint64
	lengthSet bool
	opts      uint32 // the API's option bits, plus optIOVEC
}

// record is the inherited parameter record: every element starts from a copy of its
// parent's (so a handle an element allocates is visible only to its descendants),
// attributes set fields, and calls read them.
type record struct {
	ret      portals.Errno
	err      portals.Errno // the return code of the element's call
	count    int64
	cond     bool
	threadID int64

	iface           portals.Interface
	niOpt           uint32
	pid             portals.PID
	desired, actual portals.Limits
	niH             handle
	reg             int64
	anyH            handle
	uid             portals.UID
	id              portals.ProcessID
	idLogical       bool
	rank, size      int
	desiredMap      []portals.ProcessID
	getMapSize      uint64

	ptOpt   uint32
	ptIndex portals.PTIndex

	buf      []byte
	iovecLen uint64

	md       entrySpec
	mdH      handle
	le       entrySpec
	leH      handle
	me       entrySpec
	meH      handle
	meMatch  uint64
	meIgnore uint64
	minFree  uint64
	list     me.List
	search   me.SearchOp

	eqH     handle
	event   portals.Event
	eqCount int64
	timeout int64 // ms
	which   int64

	ctH     handle
	ctEvent portals.CTEvent
	ctTest  uint64

	locOffset, length, remOffset uint64
	locGetOffset, locPutOffset   uint64
	ackReq                       portals.AckReq
	target                       portals.ProcessID
	match                        uint64
	userPtr                      uint64
	hdrData                      uint64
	atomOp                       eq.AtomicOp
	typ                          eq.AtomicType
	getMDH, putMDH               handle
	threshold                    uint64
	trigCTH                      handle
	operand                      datum
	handle1, handle2             handle

	nis, mds, les, mes, eqs, cts stack
	ptIdx                        [stackSize]portals.PTIndex
	ptNext                       int
}

// defaultRecord is the record the root element starts from.
func defaultRecord() *record {
	r := &record{
		count:    1,
		iface:    portals.IfaceDefault,
		pid:      portals.PIDAny,
		niOpt:    uint32(portals.NIMatching | portals.NIPhysical),
		niH:      invalidHandle,
		anyH:     invalidHandle,
		iovecLen: iovecLength,
		timeout:  defaultTimeout,
		eqCount:  defaultEQCount,
		atomOp:   eq.OpSum,
		typ:      eq.Uint8,
		list:     me.ListPriority,
		uid:      portals.UIDAny,
		length:   1,
		ackReq:   portals.NoAckReq,
		which:    -1,
	}
	r.desired = portals.Limits{MaxEntries: 15, MaxMDs: 10, MaxCTs: 10, MaxEQs: 10, MaxPTIndex: 63,
		MaxIovecs: iovSize, MaxListSize: 10, MaxMsgSize: defaultMsgSize, MaxAtomicSize: 64}
	return r
}

// Element kinds that get a fresh buffer.
// The searches get one too: the reference hands them the inherited buffer, which
// they never touch, but a Go slice must be as long as the length it describes.
var bufferElements = words("ptl_md ptl_md_bind ptl_me ptl_me_append ptl_le ptl_le_append ptl_le_search ptl_me_search")

// push returns the record of a new element named name: a copy of r with the
// per-element defaults of the reference interpreter.
func (r *record) push(name string) *record {
	c := *r
	c.count = 1
	c.ret = portals.OK
	c.err = portals.OK
	c.typ = eq.Uint8
	if _, ok := bufferElements[name]; ok {
		c.buf = make([]byte, c.actual.MaxMsgSize)
	}
	c.md = entrySpec{length: c.actual.MaxMsgSize}
	c.le = entrySpec{length: c.actual.MaxMsgSize}
	c.me = entrySpec{length: c.actual.MaxMsgSize}
	c.minFree = 0
	switch name {
	case "ptl_ni", "ptl_ni_init":
		c.niOpt = uint32(portals.NIMatching | portals.NIPhysical)
	case "ptl_pt", "ptl_pt_alloc":
		c.ptIndex, c.ptOpt = 0, 0
	case "ptl_eq_poll":
		c.which = -1
		c.event = portals.Event{Type: invalidU8}
	case "ptl_fetch", "ptl_trig_fetch", "ptl_swap", "ptl_trig_swap":
		if c.mds.next >= 2 {
			c.getMDH, c.putMDH = c.mds.h[c.mds.next-1], c.mds.h[c.mds.next-2]
		} else {
			c.getMDH, c.putMDH = invalidHandle, invalidHandle
		}
		if name == "ptl_swap" || name == "ptl_trig_swap" {
			c.atomOp = eq.OpSwap
		}
	}
	return &c
}
