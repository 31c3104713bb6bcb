package nic

import "encoding/binary"

var le = binary.LittleEndian

// The engine's messages travel as verbs SENDs: a fixed header, then an inline
// payload (eager data, atomic operands, reply data). Larger transfers move by RDMA
// READ (long put: the target pulls from the initiator's descriptor) or RDMA WRITE
// (long get: the target pushes into it), so their payload is never copied through
// an intermediate buffer.

const (
	msgMax   = 1024             // largest message (header + inline payload)
	hdrSize  = 92               // encoded header (with 8 payload bytes: two soft ring slots)
	eagerMax = msgMax - hdrSize // largest inline payload
)

// Message kinds.
const (
	msgPut = 1 + iota
	msgGet
	msgAtomic
	msgFetch
	msgSwap
	msgAck   // answer to a put or atomic (also the "done" of a long put without ack)
	msgReply // answer to a get, fetch or swap
)

// Header flags.
const (
	hfLong    = 1 << iota // the data is in the initiator's region (mdAddr, mdKey), not inline
	hfNoAck               // an ack message that only reports completion (no ACK event)
	hfOperand             // a swap operand follows the data in the payload
)

// header is the decoded message header.
type header struct {
	kind, flags, ack, atomOp, atomType, fail, list uint8
	pt, uid                                        uint32
	match, roff, length, hdrData, opid             uint64
	mdAddr                                         uint64
	mdKey, payload                                 uint32
	mlength                                        uint64
	rank, nid, pid                                 uint32
}

func (h *header) encode(b []byte) {
	_ = b[hdrSize-1]
	b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7] = h.kind, h.flags, h.ack, h.atomOp, h.atomType, h.fail, h.list, 0
	le.PutUint32(b[8:], h.pt)
	le.PutUint32(b[12:], h.uid)
	le.PutUint64(b[16:], h.match)
	le.PutUint64(b[24:], h.roff)
	le.PutUint64(b[32:], h.length)
	le.PutUint64(b[40:], h.hdrData)
	le.PutUint64(b[48:], h.opid)
	le.PutUint64(b[56:], h.mdAddr)
	le.PutUint32(b[64:], h.mdKey)
	le.PutUint32(b[68:], h.payload)
	le.PutUint64(b[72:], h.mlength)
	le.PutUint32(b[80:], h.rank)
	le.PutUint32(b[84:], h.nid)
	le.PutUint32(b[88:], h.pid)
}

// decode parses a message; it reports false for anything malformed (short,
// unknown kind, payload length inconsistent with the message).
func (h *header) decode(b []byte) bool {
	if len(b) < hdrSize {
		return false
	}
	h.kind, h.flags, h.ack, h.atomOp, h.atomType, h.fail, h.list = b[0], b[1], b[2], b[3], b[4], b[5], b[6]
	h.pt = le.Uint32(b[8:])
	h.uid = le.Uint32(b[12:])
	h.match = le.Uint64(b[16:])
	h.roff = le.Uint64(b[24:])
	h.length = le.Uint64(b[32:])
	h.hdrData = le.Uint64(b[40:])
	h.opid = le.Uint64(b[48:])
	h.mdAddr = le.Uint64(b[56:])
	h.mdKey = le.Uint32(b[64:])
	h.payload = le.Uint32(b[68:])
	h.mlength = le.Uint64(b[72:])
	h.rank = le.Uint32(b[80:])
	h.nid = le.Uint32(b[84:])
	h.pid = le.Uint32(b[88:])
	return h.kind >= msgPut && h.kind <= msgReply && int(h.payload) == len(b)-hdrSize
}
