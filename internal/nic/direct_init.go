package nic

import (
	"sync/atomic"
	"unsafe"

	"github.com/goportals/goportals/eq"
	"github.com/goportals/goportals/me"
)

// directPeer returns pr's direct state, creating it. Called with ni.mu held.
func (ni *NI) directPeer(pr *peer) *peerDirect {
	d := ni.direct
	if pr.idx < 0 {
		return nil
	}
	if pr.idx >= len(d.peers) {
		l := make([]*peerDirect, pr.idx+1, 2*pr.idx+2)
		copy(l, d.peers)
		d.peers = l
	}
	p := d.peers[pr.idx]
	if p == nil {
		p = &peerDirect{}
		d.peers[pr.idx] = p
	}
	return p
}

// directSent records a request about to go to pr through the engine (tracked: it
// waits for an answer, see directFinished). Called with ni.mu held.
func (ni *NI) directSent(pr *peer, tracked bool) {
	if ni.direct == nil {
		return
	}
	if p := ni.directPeer(pr); p != nil {
		p.sent++
		if tracked {
			p.track++
		}
	}
}

// directUnsent takes back a directSent whose request never left the process (a
// local failure): the target will never count it. Called with ni.mu held.
func (ni *NI) directUnsent(pr *peer) {
	if ni.direct == nil || pr == nil || pr.idx < 0 || pr.idx >= len(ni.direct.peers) {
		return
	}
	if p := ni.direct.peers[pr.idx]; p != nil && p.sent > 0 {
		p.sent--
	}
}

// directFinished records that a tracked operation got its answer (or failed).
// Called with ni.mu held.
func (ni *NI) directFinished(o *initOp) {
	if ni.direct == nil || o.pr == nil || o.pr.idx < 0 || o.pr.idx >= len(ni.direct.peers) {
		return
	}
	if p := ni.direct.peers[o.pr.idx]; p != nil && p.track > 0 {
		p.track--
	}
}

// directTry carries out o by direct access when every rule allows it, posting the
// initiator's events, and reports whether it did; otherwise the caller sends it
// through the engine. Called with ni.mu held (it stays held).
func (ni *NI) directTry(o *initOp, pr *peer, operand []byte) bool {
	p := ni.directPeer(pr)
	if p == nil {
		return directNo("the peer has no index")
	}
	if !p.tried {
		h, ok := ni.direct.remote[keyOf(pr.id)]
		if !ok {
			return directNo("the peer's table is not learned yet") // look again next time
		}
		p.tried = true
		p.rt = openRemoteTable(h)
		if p.rt == nil {
			directNo("the peer's table would not open")
		} else {
			p.selfID = seenKey(ni.physID())
			o := seenSlotIn(p.rt.tab, p.selfID, true)
			if p.sent == 0 && o >= 0 {
				// Requests an earlier NI of our pid sent are counted under the same
				// key: ours start from here.
				p.seen = u64At(p.rt.tab, o+dtSeenCount)
				p.base = p.seen.Load()
				p.in = u64At(p.rt.tab, o+dtSeenIn)
				p.me = uint64(uint32(osPID())) << 32
			} else {
				// Requests went out before we could know the count, or the
				// target's table has no room for us: stay on the engine's path.
				directNo("requests sent before the table was open, or no seen slot")
				p.rt.release()
				p.rt = nil
			}
		}
	}
	atom := o.kind == msgAtomic || o.kind == msgFetch || o.kind == msgSwap
	if o.kind != msgPut && o.kind != msgGet && !atom {
		return false
	}
	if atom {
		sz := uint64(o.atomType.Size())
		if sz != 4 && sz != 8 || o.length == 0 || o.length%sz != 0 {
			return false
		}
	}
	if p.rt == nil || p.track != 0 || p.rt.dead.Load() {
		return directNo("no table, a tracked operation, or a dead target") // the engine's path reports a dead one
	}
	if p.sent != 0 && p.seen.Load()-p.base != p.sent {
		return directNo("requests through the engine not yet handled")
	}
	if int(o.pt) >= p.rt.nwin {
		return directNo("no window for the portal index")
	}
	win := p.rt.win(int(o.pt))
	gen := u64At(win, dtWinGen)
	if p.snaps == nil {
		p.snaps = make([]*winSnap, p.rt.nwin)
	}
	s := p.snaps[o.pt]
	if g := gen.Load(); s == nil || s.gen != g {
		if s = p.rt.snapshot(win, s); s == nil {
			// Closed, changing, or its memory would not map: not again for this
			// generation (a failed open costs system calls).
			if s = p.snaps[o.pt]; s == nil {
				s = &winSnap{}
			}
			*s = winSnap{gen: g, bad: true}
			p.snaps[o.pt] = s
			return directNo("window closed, changing or unmappable")
		}
		p.snaps[o.pt] = s
	}
	if s.bad {
		return directNo("window unusable in this generation")
	}
	// The rules the target would check: permissions (a violation goes to the target,
	// which counts it), no truncation, the message size.
	need := uint32(wfPut)
	switch o.kind {
	case msgGet:
		need = wfGet
	case msgFetch, msgSwap:
		need = wfPut | wfGet
	}
	if s.flags&need != need || (s.flags&wfUIDAny == 0 && s.uid != uint32(ni.proc.uid)) ||
		o.roff > s.length || o.length > s.length-o.roff || o.length > s.maxMsg {
		return false
	}
	if atom && (o.length > s.maxAtom || !inPlaceOK(o.atomType, unsafe.Pointer(&s.mem[o.roff]))) {
		return false
	}
	if s.flags&wfCount != 0 && s.cell == nil {
		return false
	}
	// What our own memory holds goes out of it before the window is entered: an
	// operand, or a put's data from raw memory up to the eager size (a fault then
	// leaves the operation to the engine's path, which fails it the same way).
	var src []byte
	d := ni.direct
	if need := 2 * int(min(o.length, eagerMax)); len(d.buf) < need {
		d.buf = make([]byte, max(need, 2*eagerMax))
	}
	switch {
	case atom:
		src = d.buf[:o.length]
		if _, err := o.md.mem.ReadAt(src, o.localOff); err != nil {
			return false
		}
	case o.kind == msgPut && o.md.mem.IsRaw() && o.length <= eagerMax:
		src = d.buf[:o.length]
		if _, err := o.md.mem.ReadAt(src, o.localOff); err != nil {
			return false
		}
	}
	directEnter(p.in, p.me)
	if gen.Load() != s.gen {
		directLeave(p.in)
		return directNo("the window changed on entry")
	}
	if f := testDirectInWindow.Load(); f != nil {
		(*f)()
	}
	dst := s.mem[o.roff : o.roff+o.length]
	var srcErr error // a fault reading a long put's raw source, part-way
	switch o.kind {
	case msgPut:
		if src != nil {
			copy(dst, src)
		} else {
			_, srcErr = o.md.mem.ReadAt(dst, o.localOff)
		}
	case msgGet:
	default:
		old := d.buf[o.length : 2*o.length]
		var cond []byte
		if o.kind == msgSwap && o.atomOp >= eq.OpCSwap {
			cond = operand
		}
		atomicInPlace(o.atomOp, o.atomType, dst, src, cond, old)
	}
	// A get copies out while still in the window (the entry's memory may go once
	// it is revoked), and before it is counted: the target may reuse the memory
	// as soon as its counter says the get happened (the engine reads, then
	// counts). Into our memory, whose fault the REPLY reports. A fetch or swap
	// has its old data in d.buf already.
	var dstErr error
	if o.kind == msgGet {
		_, dstErr = o.md.mem.WriteAt(dst, o.localOff)
	}
	attention := false
	if srcErr == nil && s.flags&wfCount != 0 {
		n := uint64(1)
		if s.flags&wfBytes != 0 {
			n = o.length
		}
		attention = s.cell.Add(eq.CTEvent{Success: n})
	}
	if attention {
		u32At(win, dtWinNotice).Store(1)
	}
	directLeave(p.in)
	if attention {
		u32At(p.rt.tab, dtNotify).Add(1)
		directWake(p.rt.tab)
	}
	d.ops.Add(1)
	switch o.kind {
	case msgPut:
		if srcErr != nil {
			// As the engine's path, which cannot pin the range: the call fails
			// with no event; the bytes before the fault may have landed.
			d.putFault = srcErr
			return true
		}
	case msgGet:
		fail := eq.NIOK
		if dstErr != nil {
			fail = eq.NISegv
		}
		ni.initEvent(o, o.md, eq.EventReply, fail, o.length, o.roff, uint8(me.ListPriority))
		return true
	case msgFetch, msgSwap:
		fail := eq.NIOK
		if _, err := o.getMD.mem.WriteAt(d.buf[o.length:2*o.length], o.getOff); err != nil {
			fail = eq.NISegv
		}
		ni.sendEvent(o, eq.NIOK)
		ni.initEvent(o, o.getMD, eq.EventReply, fail, o.length, o.roff, uint8(me.ListPriority))
		return true
	}
	ni.sendEvent(o, eq.NIOK)
	if o.ack != NoAckReq && s.flags&wfAckOff == 0 {
		ni.initEvent(o, o.md, eq.EventAck, eq.NIOK, o.length, o.roff, uint8(me.ListPriority))
	}
	return true
}

// directFault returns (and forgets) the failure of the direct put just carried out
// whose raw source faulted, as the engine's path reports it. Called with ni.mu held.
func (ni *NI) directFault(name string) error {
	err := ni.direct.putFault
	if err == nil {
		return nil
	}
	ni.direct.putFault = nil
	return opErr(name, Fail, err)
}

// DirectOps returns how many operations this NI carried out by direct access (for
// tests and measurements).
func (ni *NI) DirectOps() uint64 {
	if ni.direct == nil {
		return 0
	}
	return ni.direct.ops.Load()
}

// directNo reports to a test why directTry leaves an operation to the engine's
// path (testDirectFallback) and returns false.
func directNo(why string) bool {
	if f := testDirectFallback.Load(); f != nil {
		(*f)(why)
	}
	return false
}

// testDirectFallback, when set by a test, is told why an operation did not go
// direct (the rules of an operation that does not fit a window are not told).
var testDirectFallback atomic.Pointer[func(string)]

// --- the process-wide list of NIs with windows (for md's Free hook) ---
