package me

// Op is the kind of an incoming operation.
type Op uint8

// The operation kinds a target sees.
const (
	// OpKindPut is a put: data flows into the entry. Needs OpPut.
	OpKindPut Op = iota + 1
	// OpKindGet is a get: data flows out of the entry. Needs OpGet.
	OpKindGet
	// OpKindAtomic is a non-fetching atomic. Needs OpPut.
	OpKindAtomic
	// OpKindFetchAtomic is a fetching atomic. Needs OpPut and OpGet.
	OpKindFetchAtomic
	// OpKindSwap is a swap (SWAP, CSWAP*, MSWAP). Needs OpPut and OpGet.
	OpKindSwap
)

// String returns the name of the operation kind.
func (o Op) String() string {
	switch o {
	case OpKindPut:
		return "put"
	case OpKindGet:
		return "get"
	case OpKindAtomic:
		return "atomic"
	case OpKindFetchAtomic:
		return "fetch-atomic"
	case OpKindSwap:
		return "swap"
	}
	return "invalid-op"
}

// valid reports whether o is a defined operation kind.
func (o Op) valid() bool { return o >= OpKindPut && o <= OpKindSwap }

// isAtomic reports whether o is one of the atomic kinds (limited by MaxAtomicSize).
func (o Op) isAtomic() bool { return o >= OpKindAtomic && o <= OpKindSwap }

// needs returns the entry options an operation kind requires.
func (o Op) needs() Options {
	switch o {
	case OpKindPut, OpKindAtomic:
		return OpPut
	case OpKindGet:
		return OpGet
	}
	return OpPut | OpGet
}

// Header is the part of an incoming message that the target matches on, as the engine
// decoded it from the wire. me copies it; it keeps no reference to the caller's value.
type Header struct {
	// Op is the operation kind.
	Op Op
	// Initiator is the sender's process id.
	Initiator ProcessID
	// UID is the sender's user id (trusted header).
	UID UID
	// MatchBits are the match bits the initiator supplied.
	MatchBits uint64
	// RemoteOffset is the offset into the target entry the initiator asked for (used unless
	// the entry manages its offset locally).
	RemoteOffset uint64
	// Length is the requested length (rlength).
	Length uint64
	// HdrData is the 64 bits of out-of-band user data.
	HdrData uint64
	// AtomicOp and AtomicType are the atomic operation and datatype codes, carried
	// through to events unchanged (me does not interpret them).
	AtomicOp, AtomicType uint8
	// Cookie is the engine's own reference to the message (for example its receive slot
	// or operation id); me returns it unchanged in events, including overflow events
	// posted long after the match.
	Cookie uint64
}
