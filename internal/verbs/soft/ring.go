package soft

import (
	"encoding/binary"
	"os"
	"sync/atomic"
	"unsafe"
)

// The ring is a single-producer single-consumer queue of messages in shared memory.
// A message is one 64-byte header slot followed by its payload in
// the next slots. The consumer polls the sequence word inside the header slot of the
// next position (one cache-line transfer per message, no separate head index). The
// consumer publishes how far it has consumed in the control page (tail), which the
// producer reads only when the ring looks full or when completing sends.

const (
	slotSize     = 64
	ringSlots    = 4096 // 256 KiB of slots per direction
	ringCtlSize  = 4096 // control page before the slots
	ringFileSize = ringCtlSize + ringSlots*slotSize

	// maxPayload is the largest payload of one message. Larger SENDs are fragmented;
	// larger RDMA transfers use cross-memory attach.
	maxPayload = 16 << 10

	// control page offsets (separate cache lines)
	ctlTail   = 0   // consumer position (written by the consumer)
	ctlErrTok = 64  // token of a message the consumer refused (NAK), written before ctlTail
	ctlErrSt  = 72  // its verbs.Status
	ctlClosed = 128 // 1 once the owner (producer) closed its queue pair or failed
	ctlWant   = 192 // 1 while the producer waits for space: the consumer wakes it
	ctlOwner  = 256 // queue pair number (uint32) and context nonce (uint64 at +8) of the owner
)

// header field offsets inside a slot
const (
	hSeq    = 0
	hOp     = 8
	hFlags  = 9
	hStatus = 10
	hLen    = 12
	hToken  = 16
	hRAddr  = 24
	hRKey   = 32
	hImm    = 36
	hA      = 40
	hB      = 48
	hPD     = 56
)

// msg is a decoded message header.
type msg struct {
	op, flags, status uint8
	len               uint32
	token             uint64
	raddr             uint64
	rkey, imm         uint32
	a, b              uint64
	pd                uint32
}

// ring is one direction of a connected queue pair: a view of the control page
// and the slots, as producer or as consumer.
type ring struct {
	ctl   []byte
	slots []byte
	tail  *uint64 // consumer position, in shared memory

	// producer state (local to the producing process)
	head       uint64
	cachedTail uint64
	// consumer state: written and read only under the context's progress lock
	// (drain, and the idle check hasWork)
	pos uint64
}

func newRing(mem []byte) *ring {
	return &ring{
		ctl:   mem[:ringCtlSize],
		slots: mem[ringCtlSize:ringFileSize],
		tail:  (*uint64)(unsafe.Pointer(&mem[ctlTail])),
	}
}

func (r *ring) seqWord(pos uint64) *uint64 {
	return (*uint64)(unsafe.Pointer(&r.slots[(pos%ringSlots)*slotSize]))
}

func (r *ring) closedWord() *uint32 { return (*uint32)(unsafe.Pointer(&r.ctl[ctlClosed])) }

// setOwner records the owning queue pair in the control page; clearOwner on destroy
// makes stale addresses of the queue pair fail to connect.
func (r *ring) setOwner(qpn uint32, nonce uint64) {
	binary.LittleEndian.PutUint64(r.ctl[ctlOwner+8:], nonce)
	atomic.StoreUint32((*uint32)(unsafe.Pointer(&r.ctl[ctlOwner])), qpn)
}

func (r *ring) owner() (uint32, uint64) {
	return atomic.LoadUint32((*uint32)(unsafe.Pointer(&r.ctl[ctlOwner]))), binary.LittleEndian.Uint64(r.ctl[ctlOwner+8:])
}

func (r *ring) wantWord() *uint32  { return (*uint32)(unsafe.Pointer(&r.ctl[ctlWant])) }
func (r *ring) errToken() *uint64  { return (*uint64)(unsafe.Pointer(&r.ctl[ctlErrTok])) }
func (r *ring) errStatus() *uint32 { return (*uint32)(unsafe.Pointer(&r.ctl[ctlErrSt])) }

// nak records, as the consumer, that the message with token failed with status. It
// must be called before the message is consumed, so a producer that sees the tail
// past the message also sees the NAK.
func (r *ring) nak(token uint64, status uint8) {
	atomic.StoreUint32(r.errStatus(), uint32(status))
	atomic.StoreUint64(r.errToken(), token)
}

func slotsFor(payload int) uint64 { return 1 + uint64((payload+slotSize-1)/slotSize) }

// consumed returns, as the producer, the consumer's position: every message below
// it has been applied (a WRITE's payload placed, a SEND's scattered, a NAK recorded).
// It is the only way the producer reads the tail, because it also declares that
// edge to the race detector: consume releases before it stores the tail, and a
// producer that completes work on the strength of the tail it read must acquire
// after reading it, or the requester's later look at the target memory (which the
// consumer's copy wrote) has no happens-before edge the detector can see.
func (r *ring) consumed() uint64 {
	t := atomic.LoadUint64(r.tail)
	raceAcquire()
	return t
}

// space reports whether a message with payload bytes fits now.
func (r *ring) space(payload int) bool {
	need := slotsFor(payload)
	if r.head+need-r.cachedTail <= ringSlots {
		return true
	}
	r.cachedTail = r.consumed()
	return r.head+need-r.cachedTail <= ringSlots
}

// consumedTo reports whether the consumer has consumed every message below pos.
func (r *ring) consumedTo(pos uint64) bool {
	if r.cachedTail >= pos {
		return true
	}
	r.cachedTail = r.consumed()
	return r.cachedTail >= pos
}

// push writes one message whose payload is gathered from parts (total bytes n).
// The caller checked space(n). It returns the position after the message.
func (r *ring) push(m *msg, parts [][]byte, n int) uint64 {
	pos := r.head
	base := (pos % ringSlots) * slotSize
	h := r.slots[base : base+slotSize]
	h[hOp], h[hFlags], h[hStatus] = m.op, m.flags, m.status
	binary.LittleEndian.PutUint32(h[hLen:], uint32(n))
	binary.LittleEndian.PutUint64(h[hToken:], m.token)
	binary.LittleEndian.PutUint64(h[hRAddr:], m.raddr)
	binary.LittleEndian.PutUint32(h[hRKey:], m.rkey)
	binary.LittleEndian.PutUint32(h[hImm:], m.imm)
	binary.LittleEndian.PutUint64(h[hA:], m.a)
	binary.LittleEndian.PutUint64(h[hB:], m.b)
	binary.LittleEndian.PutUint32(h[hPD:], m.pd)
	off := ((pos + 1) % ringSlots) * slotSize
	for _, p := range parts {
		for len(p) > 0 {
			c := copy(r.slots[off:], p)
			p = p[c:]
			off = (off + uint64(c)) % uint64(len(r.slots))
		}
	}
	end := pos + slotsFor(n)
	r.head = end
	raceRelease()
	atomic.StoreUint64(r.seqWord(pos), pos+1) // publish
	return end
}

// Single-fragment SENDs carry their first hdrInline bytes in the header slot, at
// hInl..the end of the slot (the fields a SEND does not use; its immediate moves
// to hHdrImm); the count is in hStatus and the rest of the payload follows in the
// next slots as usual. An 8-byte message is one slot, a 100-byte one two (cache
// lines are the cost), and the payload is contiguous in the ring unless the
// message wraps around its end, so message mode can hand it out in place.
const (
	hHdrImm   = hRAddr
	hInl      = hRAddr + 4
	hdrInline = slotSize - hInl
)

// pushInline writes a SEND whose first min(n, hdrInline) bytes ride in the header.
// parts gathers all n bytes; the caller checked space(n - inline).
func (r *ring) pushInline(m *msg, parts [][]byte, n int) uint64 {
	inl := min(n, hdrInline)
	pos := r.head
	base := (pos % ringSlots) * slotSize
	h := r.slots[base : base+slotSize]
	h[hOp], h[hFlags], h[hStatus] = m.op, m.flags, uint8(inl)
	binary.LittleEndian.PutUint32(h[hLen:], uint32(n-inl))
	binary.LittleEndian.PutUint64(h[hToken:], m.token)
	binary.LittleEndian.PutUint32(h[hHdrImm:], m.imm)
	// the inline prefix
	at, need := hInl, inl
	for len(parts) > 0 && need > 0 {
		p := parts[0]
		c := copy(h[at:at+need], p)
		at += c
		need -= c
		if c == len(p) {
			parts = parts[1:]
		} else {
			parts[0] = p[c:] // the caller's scratch list: trimming it in place is fine
		}
	}
	off := ((pos + 1) % ringSlots) * slotSize
	for _, p := range parts {
		for len(p) > 0 {
			c := copy(r.slots[off:], p)
			p = p[c:]
			off = (off + uint64(c)) % uint64(len(r.slots))
		}
	}
	end := pos + slotsFor(n-inl)
	r.head = end
	raceRelease()
	atomic.StoreUint64(r.seqWord(pos), pos+1) // publish
	return end
}

// pushMessage writes a single-fragment SEND of the contiguous bytes b, as
// pushInline does. The caller checked space(len(b) - inline).
func (r *ring) pushMessage(b []byte) uint64 {
	pos := r.head
	base := (pos % ringSlots) * slotSize
	h := r.slots[base : base+slotSize]
	inl := min(len(b), hdrInline)
	// one 8-byte store for op, flags, inline count and payload length
	binary.LittleEndian.PutUint64(h[hOp:], uint64(opSend)|uint64(flFirst|flLast|flHdr)<<8|uint64(inl)<<16|
		uint64(len(b)-inl)<<32)
	binary.LittleEndian.PutUint64(h[hToken:], 0)
	binary.LittleEndian.PutUint32(h[hHdrImm:], 0)
	copy(h[hInl:], b[:inl])
	if rest := b[inl:]; len(rest) > 0 {
		off := ((pos + 1) % ringSlots) * slotSize
		c := copy(r.slots[off:], rest)
		copy(r.slots, rest[c:])
	}
	end := pos + slotsFor(len(b)-inl)
	r.head = end
	raceRelease()
	atomic.StoreUint64(r.seqWord(pos), pos+1) // publish
	return end
}

// inlineBytes copies the inline prefix of the peeked message into dst.
func (r *ring) inlineBytes(dst []byte) {
	base := (r.pos % ringSlots) * slotSize
	copy(dst, r.slots[base+hInl:base+slotSize])
}

// messageBytes returns the whole payload of the peeked single-fragment SEND of
// inl inline and n further bytes: in place when it is contiguous in the ring, else
// copied into scratch (which has room for hdrInline+maxPayload bytes).
func (r *ring) messageBytes(inl, n uint32, scratch []byte) []byte {
	base := (r.pos % ringSlots) * slotSize
	start, end := base+hInl, base+slotSize+uint64(n)
	if n == 0 || end <= uint64(len(r.slots)) {
		return r.slots[start : start+uint64(inl+n)]
	}
	k := copy(scratch, r.slots[start:base+slotSize])
	r.payload(scratch[k:k+int(n)], 0)
	return scratch[:k+int(n)]
}

// peek decodes the next message if one is published. It validates the header so a
// corrupt peer cannot make the consumer read out of bounds.
func (r *ring) peek(m *msg) bool {
	pos := r.pos
	if atomic.LoadUint64(r.seqWord(pos)) != pos+1 {
		return false
	}
	raceAcquire()
	base := (pos % ringSlots) * slotSize
	h := r.slots[base : base+slotSize]
	m.op, m.flags, m.status = h[hOp], h[hFlags], h[hStatus]
	m.len = binary.LittleEndian.Uint32(h[hLen:])
	m.token = binary.LittleEndian.Uint64(h[hToken:])
	m.raddr = binary.LittleEndian.Uint64(h[hRAddr:])
	m.rkey = binary.LittleEndian.Uint32(h[hRKey:])
	m.imm = binary.LittleEndian.Uint32(h[hImm:])
	if m.op == opSend && m.flags&flHdr != 0 {
		m.imm = binary.LittleEndian.Uint32(h[hHdrImm:])
	}
	m.a = binary.LittleEndian.Uint64(h[hA:])
	m.b = binary.LittleEndian.Uint64(h[hB:])
	m.pd = binary.LittleEndian.Uint32(h[hPD:])
	if m.len > maxPayload {
		m.op, m.len = opCorrupt, 0 // consume the header only
	}
	return true
}

// payload copies the payload of the peeked message, from byte off, into dst.
func (r *ring) payload(dst []byte, off int) {
	start := ((r.pos+1)%ringSlots)*slotSize + uint64(off)
	start %= uint64(len(r.slots))
	for len(dst) > 0 {
		c := copy(dst, r.slots[start:])
		dst = dst[c:]
		start = 0
	}
}

// consume releases the peeked message of payload n bytes. It clears the first word
// of every payload slot first: any slot may later hold a header, and stale payload
// bytes there must never look like that header's sequence number.
func (r *ring) consume(n uint32) {
	k := slotsFor(int(n))
	pos := r.pos
	for i := uint64(1); i < k; i++ {
		*r.seqWord(pos + i) = 0
	}
	r.pos = pos + k
	raceRelease()
	atomic.StoreUint64(r.tail, pos+k)
}

// ready reports, without decoding, whether a message is published.
func (r *ring) ready() bool {
	pos := r.pos
	return atomic.LoadUint64(r.seqWord(pos)) == pos+1
}

// prefault maps every page of the ring (control page and slots) into this
// process now, one read of each page's first word: the pages otherwise fault in
// one by one (a minor fault, microseconds) as a fresh connection's first messages
// reach them, on the path of those messages. A connected queue pair's two rings
// then hold their memory from the start (they do anyway once a lap of messages
// went by).
func (r *ring) prefault() {
	page := os.Getpagesize()
	for _, b := range [][]byte{r.ctl, r.slots} {
		for off := 0; off < len(b); off += page {
			atomic.LoadUint64((*uint64)(unsafe.Pointer(&b[off])))
		}
	}
}
