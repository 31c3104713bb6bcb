package nic

import (
	"testing"
)

// FuzzHandleMessage feeds arbitrary messages to a live NI's target engine (a PT
// with persistent entries of every kind) and to the answer path: nothing may panic,
// and malformed input must be counted, not trusted.
func FuzzHandleMessage(f *testing.F) {
	seed := func(h header, payload []byte) []byte {
		b := make([]byte, hdrMaxLen+len(payload))
		h.payload = uint32(len(payload))
		n := h.encode(b)
		return append(b[:n], payload...)
	}
	f.Add(seed(header{kind: msgPut, pt: 4, match: 0x42, length: 8}, make([]byte, 8)))
	f.Add(seed(header{kind: msgGet, pt: 4, match: 0x42, length: 16}, nil))
	f.Add(seed(header{kind: msgAtomic, pt: 4, match: 0x42, length: 8, atomType: 8}, make([]byte, 8)))
	f.Add(seed(header{kind: msgSwap, pt: 4, match: 0x42, length: 8, atomOp: 11, atomType: 8, flags: hfOperand}, make([]byte, 16)))
	f.Add(seed(header{kind: msgPut, pt: 4, match: 0x42, length: 1 << 20, flags: hfLong}, make([]byte, 16)))
	f.Add(seed(header{kind: msgAck, opid: 1}, nil))
	f.Add([]byte{1, 2, 3})
	nis := newNIs(f, 2, NIMatching|NIPhysical)
	tgt := nis[1]
	q := mustEQn(f, tgt, 1024)
	if _, err := tgt.PTAlloc(0, q, 4); err != nil {
		f.Fatal(err)
	}
	buf := make([]byte, 256)
	for _, o := range []MEOptions{MEOpPut | MEOpGet, MEOpPut | MEOpGet | MEManageLocal, MEOpPut | MEUseOnce} {
		if _, err := tgt.MEAppend(4, MESpec{Start: buf, UID: UIDAny, Options: o, MatchID: ProcessID{NID: NIDAny, PID: PIDAny},
			IgnoreBits: ^uint64(0)}, PriorityList, 0); err != nil {
			f.Fatal(err)
		}
	}
	pr := mustPeer(f, tgt, nis[0])
	f.Fuzz(func(t *testing.T, msg []byte) {
		var h header
		if !h.decode(msg) {
			return
		}
		payload := h.payloadOf(msg)
		if h.kind == msgAck || h.kind == msgReply {
			tgt.handleAnswer(pr, &h, payload)
		} else {
			tgt.handleRequest(pr, &h, payload)
		}
		for {
			if _, err := q.Get(); err != nil && ErrnoOf(err) == EQEmpty {
				break
			}
		}
	})
}
