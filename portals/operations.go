package portals

import (
	"github.com/goportals/goportals/internal/nic"
)

// Target names where an operation lands: the target process (a rank on a logical
// NI, a node and process id on a physical one), its portal table index, the match
// bits an entry must accept (ignored by a non-matching NI) and the offset into the
// matched entry's memory (unless the entry manages its offset locally).
type Target struct {
	ID     ProcessID
	PT     PTIndex
	Match  MatchBits
	Offset uint64
}

// Trigger defers an operation until counter CT reaches Threshold (successes plus
// failures), as Portals' triggered operations do. The zero Trigger means now.
type Trigger struct {
	CT        *CT
	Threshold uint64
}

// OpOptions are the optional parts of an operation. The zero value asks for no
// acknowledgment, sends no header data, and starts the operation now.
type OpOptions struct {
	// Ack is the acknowledgment a put or atomic asks for (NoAckReq, AckReqFull,
	// CTAckReq, OCAckReq); gets and fetching atomics ignore it.
	Ack AckReq
	// HdrData are 64 bits delivered with the operation in the target's event.
	HdrData uint64
	// Cookie is returned in the initiator's events of this operation
	// (Event.UserPtr), Portals' user_ptr.
	Cookie uint64
	// Trigger, when its CT is set, makes this a triggered operation.
	Trigger Trigger
}

// Span is a byte range of a memory descriptor: the local side of an operation.
// Make one with MD.Span or MD.All; it is a small value, free to copy.
type Span struct {
	md       *MD
	off, len uint64
}

// Span returns the n bytes of the descriptor at offset off. Bounds are checked
// when an operation uses the span (ArgInvalid).
func (m *MD) Span(off, n uint64) Span { return Span{md: m, off: off, len: n} }

// All returns the span of the whole descriptor.
func (m *MD) All() Span {
	if m == nil {
		return Span{}
	}
	return Span{md: m, len: m.Len()}
}

// MD returns the descriptor of the span.
func (s Span) MD() *MD { return s.md }

// Offset returns the span's offset in its descriptor.
func (s Span) Offset() uint64 { return s.off }

// Len returns the span's length in bytes.
func (s Span) Len() uint64 { return s.len }

// Put sends the span's bytes to the entry that accepts them at to (PtlPut,
// PtlTriggeredPut with o.Trigger). It returns once the operation is started. The
// initiator's events go to the descriptor's event queue and counter: EventSend
// when the data has left the span, then EventAck if o.Ack asked for one.
//
// Buffer reuse: the span's memory must not change until EventSend (or, with
// MDEventSendDisable, the counter's CT_SEND count) reports the operation; on a
// descriptor bound with MDVolatile, a put of at most Limits.MaxVolatileSize bytes
// copies the data before Put returns, and the memory may change at once.
func (s Span) Put(to Target, o OpOptions) error {
	if s.md == nil || s.md.m == nil {
		return errNilSpan(o, "PtlPut")
	}
	if o.Trigger.CT.invalid() {
		return errTrigger(o, "PtlPut")
	}
	if o.Trigger.CT != nil {
		return nic.TriggeredPut(s.md.core(), s.off, s.len, nic.AckReq(o.Ack), to.ID, nic.PTIndex(to.PT), to.Match,
			to.Offset, o.Cookie, o.HdrData, o.Trigger.CT.core(), o.Trigger.Threshold)
	}
	return nic.Put(s.md.core(), s.off, s.len, nic.AckReq(o.Ack), to.ID, nic.PTIndex(to.PT), to.Match,
		to.Offset, o.Cookie, o.HdrData)
}

// Get reads bytes from the entry that accepts them at from into the span (PtlGet,
// PtlTriggeredGet). EventReply reports the data in place.
//
// Buffer reuse: the span's memory is written until EventReply (or the counter's
// CT_REPLY count) reports the operation; read it only after that.
func (s Span) Get(from Target, o OpOptions) error {
	if s.md == nil || s.md.m == nil {
		return errNilSpan(o, "PtlGet")
	}
	if o.Trigger.CT.invalid() {
		return errTrigger(o, "PtlGet")
	}
	if o.Trigger.CT != nil {
		return nic.TriggeredGet(s.md.core(), s.off, s.len, from.ID, nic.PTIndex(from.PT), from.Match,
			from.Offset, o.Cookie, o.Trigger.CT.core(), o.Trigger.Threshold)
	}
	return nic.Get(s.md.core(), s.off, s.len, from.ID, nic.PTIndex(from.PT), from.Match, from.Offset, o.Cookie)
}

// Atomic applies op element by element (datatype dt) with the span's bytes as
// operands to the target memory (PtlAtomic, PtlTriggeredAtomic). The span's length
// is a multiple of dt's size and at most Limits.MaxAtomicSize.
//
// Buffer reuse: as for Put.
func (s Span) Atomic(to Target, op AtomicOp, dt AtomicType, o OpOptions) error {
	if s.md == nil || s.md.m == nil {
		return errNilSpan(o, "PtlAtomic")
	}
	if o.Trigger.CT.invalid() {
		return errTrigger(o, "PtlAtomic")
	}
	if o.Trigger.CT != nil {
		return nic.TriggeredAtomic(s.md.core(), s.off, s.len, nic.AckReq(o.Ack), to.ID, nic.PTIndex(to.PT),
			to.Match, to.Offset, o.Cookie, o.HdrData, op, dt, o.Trigger.CT.core(), o.Trigger.Threshold)
	}
	return nic.Atomic(s.md.core(), s.off, s.len, nic.AckReq(o.Ack), to.ID, nic.PTIndex(to.PT), to.Match,
		to.Offset, o.Cookie, o.HdrData, op, dt)
}

// FetchAtomic applies op with the span's bytes as operands and returns the target
// memory's previous contents into result, of the same length (PtlFetchAtomic,
// PtlTriggeredFetchAtomic). The initiator's events go to result's descriptor.
//
// Buffer reuse: the span as for Put; result as for Get.
func (s Span) FetchAtomic(result Span, to Target, op AtomicOp, dt AtomicType, o OpOptions) error {
	if s.md == nil || s.md.m == nil || result.md == nil || result.md.m == nil {
		return errNilSpan(o, "PtlFetchAtomic")
	}
	if o.Trigger.CT.invalid() {
		return errTrigger(o, "PtlFetchAtomic")
	}
	if o.Trigger.CT != nil {
		return nic.TriggeredFetchAtomic(result.md.core(), result.off, s.md.core(), s.off, s.len, to.ID,
			nic.PTIndex(to.PT), to.Match, to.Offset, o.Cookie, o.HdrData, op, dt, o.Trigger.CT.core(),
			o.Trigger.Threshold)
	}
	return nic.FetchAtomic(result.md.core(), result.off, s.md.core(), s.off, s.len, to.ID, nic.PTIndex(to.PT),
		to.Match, to.Offset, o.Cookie, o.HdrData, op, dt)
}

// Swap performs op (OpSwap, a conditional swap OpCSwap..OpCSwapGT whose
// comparison value is operand, or OpMSwap whose mask is operand) with the span's
// bytes, returning the previous target contents into result (PtlSwap,
// PtlTriggeredSwap). operand holds one element of dt.
//
// Buffer reuse: as for FetchAtomic; operand is copied before Swap returns.
func (s Span) Swap(result Span, to Target, op AtomicOp, dt AtomicType, operand []byte, o OpOptions) error {
	if s.md == nil || s.md.m == nil || result.md == nil || result.md.m == nil {
		return errNilSpan(o, "PtlSwap")
	}
	if o.Trigger.CT.invalid() {
		return errTrigger(o, "PtlSwap")
	}
	if o.Trigger.CT != nil {
		return nic.TriggeredSwap(result.md.core(), result.off, s.md.core(), s.off, s.len, to.ID,
			nic.PTIndex(to.PT), to.Match, to.Offset, o.Cookie, o.HdrData, operand, op, dt, o.Trigger.CT.core(),
			o.Trigger.Threshold)
	}
	return nic.Swap(result.md.core(), result.off, s.md.core(), s.off, s.len, to.ID, nic.PTIndex(to.PT),
		to.Match, to.Offset, o.Cookie, o.HdrData, operand, op, dt)
}

// errTrigger is the error of an operation whose trigger names no counter.
func errTrigger(o OpOptions, op string) error {
	return errInvalid("PtlTriggered"+op[len("Ptl"):], "trigger counting event")
}

// errNilSpan is the error of an operation on a span of no descriptor.
func errNilSpan(o OpOptions, op string) error {
	if o.Trigger.CT != nil {
		op = "PtlTriggered" + op[len("Ptl"):]
	}
	return errNil(op, "memory descriptor")
}
