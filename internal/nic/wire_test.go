package nic

import (
	"math/rand/v2"
	"testing"
)

// TestHeaderRoundTrip: every field survives encode and decode, present or zero,
// and the payload is what follows the header.
func TestHeaderRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	pick := func(v uint64) uint64 {
		if r.IntN(2) == 0 {
			return 0
		}
		return v
	}
	for i := 0; i < 5000; i++ {
		h := header{kind: uint8(msgPut + r.IntN(msgReply)), flags: uint8(r.IntN(8)), ack: uint8(r.IntN(4)),
			atomOp: uint8(pick(uint64(r.IntN(256)))), atomType: uint8(pick(uint64(r.IntN(256)))),
			fail: uint8(pick(uint64(r.IntN(256)))), list: uint8(pick(uint64(r.IntN(256)))),
			pt: uint32(r.IntN(256)), uid: uint32(pick(uint64(r.Uint32()))), match: pick(r.Uint64()), roff: pick(r.Uint64()),
			length: pick(r.Uint64()), hdrData: pick(r.Uint64()), opid: pick(r.Uint64()), mlength: pick(r.Uint64())}
		payload := make([]byte, r.IntN(64))
		for j := range payload {
			payload[j] = byte(r.Uint32())
		}
		if r.IntN(2) == 0 {
			h.length = uint64(len(payload)) // the common case of an eager request: left out when implied
		}
		h.payload = uint32(len(payload))
		b := make([]byte, hdrMaxLen, hdrMaxLen+len(payload))
		n := h.encode(b)
		if n > hdrMaxLen || n > hdrSize {
			t.Fatalf("header of %d bytes, room for %d", n, min(hdrMaxLen, hdrSize))
		}
		msg := append(b[:n], payload...)
		var got header
		if !got.decode(msg) {
			t.Fatalf("%+v: decode refused its encoding % x", h, msg)
		}
		if got != h {
			t.Fatalf("decoded %+v, want %+v", got, h)
		}
		if p := got.payloadOf(msg); string(p) != string(payload) {
			t.Fatalf("payload % x, want % x", p, payload)
		}
	}
}

// TestHeaderShortAndTruncated: a message cut inside its header is malformed.
func TestHeaderShortAndTruncated(t *testing.T) {
	h := header{kind: msgAck, uid: 7, match: 1, roff: 2, length: 3, hdrData: 4, opid: 5, mlength: 6, fail: 1}
	b := make([]byte, hdrMaxLen)
	n := h.encode(b)
	for k := 0; k < n; k++ {
		var got header
		if got.decode(b[:k]) {
			t.Fatalf("a message of %d of the header's %d bytes decoded as %+v", k, n, got)
		}
	}
}

// TestSmallPutIsOneRingSlot: the request of an 8-byte put with match bits and a
// remote offset (and a process uid) is small enough to ride with its data in the
// 36 bytes of a soft ring's header slot.
func TestSmallPutIsOneRingSlot(t *testing.T) {
	h := header{kind: msgPut, pt: 3, uid: 1000, match: 0x7074_6c62, roff: 64, length: 8, payload: 8}
	b := make([]byte, hdrMaxLen)
	if n := h.encode(b); n+8 > 36 {
		t.Fatalf("an 8-byte put is %d bytes with its header: more than one slot", n+8)
	}
	a := header{kind: msgAck, opid: 99, mlength: 8, roff: 64, pt: 3}
	if n := a.encode(b); n > 36 {
		t.Fatalf("an ACK is %d bytes: more than one slot", n)
	}
}
