package nic

import "encoding/binary"

var le = binary.LittleEndian

// The engine's messages travel as verbs SENDs: a fixed header, then an inline
// payload (eager data, atomic operands, reply data). Larger transfers move by RDMA
// READ (long put: the target pulls from the initiator's descriptor) or RDMA WRITE
// (long get: the target pushes into it), so their payload is never copied through
// an intermediate buffer. A long put may also be pushed: its request carries
// hfPush, the target matches it, pins the entry's range and answers msgCTS with
// that range's segments; the initiator RDMA WRITEs its data there and sends
// msgFin behind the writes on the same queue pair (a reliable connection places
// them before it delivers the FIN); the target then posts its events and the ACK
// as after a pull. On a provider whose RDMA is a copy by the CPU, a write by the
// process that owns the source runs faster than a read by the target (on Linux,
// process_vm_writev from the data's own process against process_vm_readv from
// the other one), and the copy runs on the initiator, which waits for its ACK
// anyway. Where the copy is by the CPU in a node, the target may split a large
// pushed put: its CTS asks for the first part only (mlength), and it reads the rest
// itself meanwhile (push.go).

const (
	msgMax   = 1024             // largest message (header + inline payload)
	hdrSize  = 92               // room for the encoded header (the largest is hdrMaxLen)
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
	msgCTS   // a long put's target to its initiator: write the data into these segments
	msgFin   // a long put's initiator to its target: the data written after the CTS is in place
)

// Header flags.
const (
	hfLong    = 1 << iota // the data is in the initiator's region (mdAddr, mdKey), not inline
	hfNoAck               // an ack message that only reports completion (no ACK event)
	hfOperand             // a swap operand follows the data in the payload
	hfPush                // a long put whose initiator can write the data itself (answers msgCTS)
)

// header is the decoded message header.
type header struct {
	kind, flags, ack, atomOp, atomType, fail, list uint8
	pt, uid                                        uint32
	match, roff, length, hdrData, opid             uint64
	payload                                        uint32 // inline payload bytes after the header
	mlength                                        uint64
}

// The header travels compact: six fixed bytes (kind, flags, a presence mask, the
// ack kind, the portal index), then only the fields that are not zero, in a fixed
// order. An eager put's length is its payload's and is left out. An 8-byte put
// with match bits is 14 bytes of header: with its data it fits the 36 bytes a
// soft ring's header slot carries, so the message is one cache line.
const (
	hdrFixed  = 6
	hdrMaxLen = hdrFixed + 4 + 4 + 6*8 // every optional field present
)

// Presence bits of the optional fields.
const (
	pMisc  = 1 << iota // atomOp, atomType, fail, list (4 bytes)
	pUID               // 4 bytes
	pMatch             // 8 bytes each from here
	pRoff
	pLength
	pHdrData
	pOpid
	pMLength
)

// impliedLength reports whether a message of kind with flags carries exactly its
// length in inline payload (an eager put, atomic or fetching atomic), so the
// header leaves the length out when it equals the payload's.
func impliedLength(kind, flags uint8) bool {
	return flags&hfLong == 0 && (kind == msgPut || kind == msgAtomic || kind == msgFetch)
}

// encode writes h (h.payload set) into b, which has room for hdrMaxLen bytes, and
// returns the encoded length.
func (h *header) encode(b []byte) int {
	_ = b[hdrMaxLen-1]
	var present uint8
	n := hdrFixed
	if h.atomOp|h.atomType|h.fail|h.list != 0 {
		present |= pMisc
		b[n], b[n+1], b[n+2], b[n+3] = h.atomOp, h.atomType, h.fail, h.list
		n += 4
	}
	if h.uid != 0 {
		present |= pUID
		le.PutUint32(b[n:], h.uid)
		n += 4
	}
	put := func(bit uint8, v uint64, always bool) {
		if v != 0 || always {
			present |= bit
			le.PutUint64(b[n:], v)
			n += 8
		}
	}
	put(pMatch, h.match, false)
	put(pRoff, h.roff, false)
	if implied := impliedLength(h.kind, h.flags); !implied || h.length != uint64(h.payload) {
		// (a zero length that the payload would contradict is written too)
		put(pLength, h.length, implied)
	}
	put(pHdrData, h.hdrData, false)
	put(pOpid, h.opid, false)
	put(pMLength, h.mlength, false)
	b[0], b[1], b[2], b[3] = h.kind, h.flags, present, h.ack
	le.PutUint16(b[4:], uint16(h.pt))
	return n
}

// decode parses a message and sets h.payload to the length of the inline payload
// that follows the header (the message's last h.payload bytes); it reports false
// for anything malformed (short, unknown kind).
func (h *header) decode(b []byte) bool {
	if len(b) < hdrFixed {
		return false
	}
	*h = header{kind: b[0], flags: b[1], ack: b[3], pt: uint32(le.Uint16(b[4:]))}
	present := b[2]
	n := hdrFixed
	if present&pMisc != 0 {
		if len(b) < n+4 {
			return false
		}
		h.atomOp, h.atomType, h.fail, h.list = b[n], b[n+1], b[n+2], b[n+3]
		n += 4
	}
	if present&pUID != 0 {
		if len(b) < n+4 {
			return false
		}
		h.uid = le.Uint32(b[n:])
		n += 4
	}
	for _, f := range [...]struct {
		bit uint8
		v   *uint64
	}{{pMatch, &h.match}, {pRoff, &h.roff}, {pLength, &h.length}, {pHdrData, &h.hdrData}, {pOpid, &h.opid}, {pMLength, &h.mlength}} {
		if present&f.bit != 0 {
			if len(b) < n+8 {
				return false
			}
			*f.v = le.Uint64(b[n:])
			n += 8
		}
	}
	h.payload = uint32(len(b) - n)
	if present&pLength == 0 && impliedLength(h.kind, h.flags) {
		h.length = uint64(h.payload)
	}
	return h.kind >= msgPut && h.kind <= msgFin
}

// payloadOf returns the inline payload of a message whose header h decoded.
func (h *header) payloadOf(msg []byte) []byte { return msg[len(msg)-int(h.payload):] }
