package bootstrap

import (
	"encoding/binary"
	"io"
)

// The wire protocol between a rank (client) and the launcher (server), over one
// stream connection per rank. Every message is a frame:
//
//	uint32 length of the rest (big endian) | uint8 op | uint32 request id | payload
//
// Strings are uint16 length + bytes, values uint32 length + bytes, integers
// big-endian. The client's first frame must be opHello; the server answers every
// request except opPut with one opReply carrying the request's id.
const (
	opHello    uint8 = 1 // rank u32, size u32, job key string
	opPut      uint8 = 2 // key string, value bytes; no reply
	opFence    uint8 = 3 // no payload
	opBarrier  uint8 = 4 // no payload
	opGet      uint8 = 5 // rank u32, key string
	opCancel   uint8 = 6 // id of the collective to withdraw; no reply of its own
	opAbort    uint8 = 7 // code i32, message string
	opFinalize uint8 = 8 // no payload
	opReply    uint8 = 9 // status u8, then a value (get) or a message string (errors)
)

// Reply statuses; each error status maps to a sentinel error.
const (
	stOK uint8 = iota
	stNotFound
	stPeerLost
	stAborted
	stProtocol
	stAuth
	stBadRank
	stCancelled
	stInvalidKey
	stTooLarge
)

// headerLen is the op byte plus the request id; maxFrame bounds a frame body.
const (
	headerLen = 1 + 4
	maxFrame  = headerLen + 2 + MaxKeyLen + 4 + MaxValueLen + 64
	// maxMessage bounds abort and error message strings.
	maxMessage = 1024
)

// statusErr maps a reply status to its sentinel error (nil for stOK).
func statusErr(st uint8) error {
	switch st {
	case stOK:
		return nil
	case stNotFound:
		return ErrNotFound
	case stPeerLost:
		return ErrPeerLost
	case stAborted:
		return ErrAborted
	case stAuth:
		return ErrAuth
	case stBadRank:
		return ErrBadRank
	case stInvalidKey:
		return ErrInvalidKey
	case stTooLarge:
		return ErrValueTooLarge
	default:
		return ErrProtocol
	}
}

// frame is a message being built; its first 4 bytes are the length, filled by bytes.
type frame struct{ b []byte }

// newFrame starts a frame of op with request id.
func newFrame(op uint8, id uint32) *frame {
	f := &frame{b: make([]byte, 4, 64)}
	f.b = append(f.b, op)
	f.b = binary.BigEndian.AppendUint32(f.b, id)
	return f
}

func (f *frame) u8(v uint8) *frame   { f.b = append(f.b, v); return f }
func (f *frame) u32(v uint32) *frame { f.b = binary.BigEndian.AppendUint32(f.b, v); return f }

// str appends a string, cut to 65535 bytes.
func (f *frame) str(s string) *frame {
	if len(s) > 0xffff {
		s = s[:0xffff]
	}
	f.b = binary.BigEndian.AppendUint16(f.b, uint16(len(s)))
	f.b = append(f.b, s...)
	return f
}

func (f *frame) val(v []byte) *frame {
	f.b = binary.BigEndian.AppendUint32(f.b, uint32(len(v)))
	f.b = append(f.b, v...)
	return f
}

// bytes returns the finished frame with its length prefix set.
func (f *frame) bytes() []byte {
	binary.BigEndian.PutUint32(f.b, uint32(len(f.b)-4))
	return f.b
}

// readFrame reads one frame and returns its op, id and payload.
func readFrame(r io.Reader) (op uint8, id uint32, payload []byte, err error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, 0, nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n < headerLen || n > maxFrame {
		return 0, 0, nil, errDetail(ErrProtocol, "frame length %d outside [%d, %d]", n, headerLen, maxFrame)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return 0, 0, nil, err
	}
	return body[0], binary.BigEndian.Uint32(body[1:5]), body[5:], nil
}

// parser reads fields of a payload; the first short read sets err and makes
// every later read return zero values.
type parser struct {
	b   []byte
	err error
}

func (p *parser) need(n int) bool {
	if p.err != nil {
		return false
	}
	if len(p.b) < n {
		p.err = errDetail(ErrProtocol, "payload too short")
		return false
	}
	return true
}

func (p *parser) u8() uint8 {
	if !p.need(1) {
		return 0
	}
	v := p.b[0]
	p.b = p.b[1:]
	return v
}

func (p *parser) u32() uint32 {
	if !p.need(4) {
		return 0
	}
	v := binary.BigEndian.Uint32(p.b)
	p.b = p.b[4:]
	return v
}

func (p *parser) str() string {
	if !p.need(2) {
		return ""
	}
	n := int(binary.BigEndian.Uint16(p.b))
	p.b = p.b[2:]
	if !p.need(n) {
		return ""
	}
	s := string(p.b[:n])
	p.b = p.b[n:]
	return s
}

// val returns a copy of a length-prefixed value.
func (p *parser) val() []byte {
	n := int(p.u32())
	if !p.need(n) {
		return nil
	}
	v := append([]byte{}, p.b[:n]...)
	p.b = p.b[n:]
	return v
}

// done returns the parse error, or ErrProtocol if bytes are left over.
func (p *parser) done() error {
	if p.err == nil && len(p.b) != 0 {
		p.err = errDetail(ErrProtocol, "%d trailing bytes", len(p.b))
	}
	return p.err
}
