package nic

import (
	"errors"
	"fmt"

	"github.com/goportals/goportals/eq"
	"github.com/goportals/goportals/internal/mdreg"
	"github.com/goportals/goportals/md"
)

// op is an initiator operation in flight.
type initOp struct {
	id       uint64
	kind     uint8
	md       *MD // the descriptor whose data goes out (put, atomic, fetch/swap put side) or, for get, comes in
	getMD    *MD // fetch and swap: where the old data comes back
	getOff   uint64
	localOff uint64
	length   uint64
	userPtr  uint64
	ack      AckReq
	pt       PTIndex
	match    uint64
	roff     uint64
	hdrData  uint64
	atomOp   AtomicOp
	atomType AtomicType
	pinned   *mdreg.Pinned
	stage    []byte // a long transfer's staging copy (nil: the target uses the descriptor's memory)
	pr       *peer
	long     bool
	pushed   bool // a long put whose data we wrote on the target's msgCTS (guarded by ni.mu)
	sendDone bool // the SEND event was posted (guarded by ni.mu)
	tracked  bool // in ni.ops until answered
}

// Put starts a put (PtlPut): length bytes of m from localOffset to the entry that
// matches at target's portal index pt.
func Put(m *MD, localOffset, length uint64, ack AckReq, target ProcessID, pt PTIndex, match MatchBits,
	remoteOffset uint64, userPtr uint64, hdrData uint64) error {
	// (field by field, as putOp's record: a composite literal is built aside and
	// copied, and the copy's wide loads of the narrow stores just made stall)
	var o initOp
	o.kind, o.md, o.localOff, o.length, o.userPtr, o.ack = msgPut, m, localOffset, length, userPtr, ack
	o.pt, o.match, o.roff, o.hdrData = pt, match, remoteOffset, hdrData
	return mdNI(m).start("PtlPut", &o, target, nil)
}

// Get starts a get (PtlGet): length bytes from the matching entry into m at localOffset.
func Get(m *MD, localOffset, length uint64, target ProcessID, pt PTIndex, match MatchBits,
	remoteOffset uint64, userPtr uint64) error {
	o := putOp(msgGet, m, localOffset, length, NoAckReq, pt, match, remoteOffset, userPtr, 0, 0, 0)
	return mdNI(m).start("PtlGet", &o, target, nil)
}

// Atomic starts an atomic (PtlAtomic): the target applies aop element-wise with the
// operand data of m at localOffset.
func Atomic(m *MD, localOffset, length uint64, ack AckReq, target ProcessID, pt PTIndex, match MatchBits,
	remoteOffset uint64, userPtr uint64, hdrData uint64, aop AtomicOp, dt AtomicType) error {
	o := putOp(msgAtomic, m, localOffset, length, ack, pt, match, remoteOffset, userPtr, hdrData, aop, dt)
	return mdNI(m).start("PtlAtomic", &o, target, nil)
}

// FetchAtomic starts a fetching atomic (PtlFetchAtomic): the old target data comes
// back into getMD at getOffset.
func FetchAtomic(getMD *MD, getOffset uint64, putMD *MD, putOffset uint64, length uint64, target ProcessID,
	pt PTIndex, match MatchBits, remoteOffset uint64, userPtr uint64, hdrData uint64, aop AtomicOp, dt AtomicType) error {
	o := fetchOp(msgFetch, getMD, getOffset, putMD, putOffset, length, pt, match, remoteOffset, userPtr, hdrData, aop, dt)
	return mdNI(putMD).start("PtlFetchAtomic", &o, target, nil)
}

// Swap starts a swap (PtlSwap): SWAP, the conditional swaps (operand is the
// comparison value) or MSWAP (operand is the mask); the old data comes back into getMD.
func Swap(getMD *MD, getOffset uint64, putMD *MD, putOffset uint64, length uint64, target ProcessID,
	pt PTIndex, match MatchBits, remoteOffset uint64, userPtr uint64, hdrData uint64, operand []byte,
	aop AtomicOp, dt AtomicType) error {
	o := fetchOp(msgSwap, getMD, getOffset, putMD, putOffset, length, pt, match, remoteOffset, userPtr, hdrData, aop, dt)
	return mdNI(putMD).start("PtlSwap", &o, target, operand)
}

// putOp builds the record of an operation on one descriptor (put, get, atomic);
// the API calls and their triggered forms share it.
func putOp(kind uint8, m *MD, localOffset, length uint64, ack AckReq, pt PTIndex, match MatchBits,
	remoteOffset, userPtr, hdrData uint64, aop AtomicOp, dt AtomicType) initOp {
	return initOp{kind: kind, md: m, localOff: localOffset, length: length, userPtr: userPtr, ack: ack, pt: pt,
		match: match, roff: remoteOffset, hdrData: hdrData, atomOp: aop, atomType: dt}
}

// fetchOp builds the record of a fetching atomic or swap (two descriptors).
func fetchOp(kind uint8, getMD *MD, getOffset uint64, putMD *MD, putOffset, length uint64, pt PTIndex,
	match MatchBits, remoteOffset, userPtr, hdrData uint64, aop AtomicOp, dt AtomicType) initOp {
	return initOp{kind: kind, md: putMD, getMD: getMD, getOff: getOffset, localOff: putOffset, length: length,
		userPtr: userPtr, pt: pt, match: match, roff: remoteOffset, hdrData: hdrData, atomOp: aop, atomType: dt}
}

// copyOp moves an operation record to the heap (the API functions build it on the stack).
func copyOp(o *initOp) *initOp {
	c := *o
	return &c
}

// maxRequestSegs is how many memory segments a long transfer's request names (16
// bytes each, in the inline payload).
const maxRequestSegs = eagerMax / 16

// validate checks an operation's arguments against its descriptors and limits.
func (ni *NI) validate(o *initOp, operand []byte) error {
	if o.md.released.Load() || (o.getMD != nil && (o.getMD.ni != ni || o.getMD.released.Load())) {
		return fmt.Errorf("descriptor released or of another NI")
	}
	if o.localOff > o.md.mem.Len() || o.length > o.md.mem.Len()-o.localOff {
		return fmt.Errorf("[%d, +%d) outside the descriptor of %d bytes", o.localOff, o.length, o.md.mem.Len())
	}
	if o.getMD != nil && (o.getOff > o.getMD.mem.Len() || o.length > o.getMD.mem.Len()-o.getOff) {
		return fmt.Errorf("[%d, +%d) outside the get descriptor of %d bytes", o.getOff, o.length, o.getMD.mem.Len())
	}
	if o.length > ni.limits.MaxMsgSize {
		return fmt.Errorf("length %d above max_msg_size %d", o.length, ni.limits.MaxMsgSize)
	}
	if o.kind != msgGet && o.md.opts&MDVolatile != 0 && o.length > ni.limits.MaxVolatileSize {
		// The data of a volatile descriptor must be out of it when the call returns:
		// only max_volatile_size bytes can be (puts and atomics, fetching or not).
		return fmt.Errorf("length %d from a volatile descriptor above max_volatile_size %d",
			o.length, ni.limits.MaxVolatileSize)
	}
	if o.ack > OCAckReq {
		return fmt.Errorf("ack request %d", o.ack)
	}
	if o.ack == AckReqFull && o.md.eq == nil {
		return fmt.Errorf("an ACK needs an event queue on the descriptor")
	}
	if o.ack == CTAckReq && o.md.ct == nil {
		// OC_ACK needs none: without a counter it counts nowhere, as in the reference.
		return fmt.Errorf("a counting ack needs a counting event on the descriptor")
	}
	if int(o.pt) > ni.limits.MaxPTIndex {
		return fmt.Errorf("portal index %d above max_pt_index", o.pt)
	}
	switch o.kind {
	case msgAtomic, msgFetch, msgSwap:
		max := ni.limits.MaxAtomicSize
		if o.kind != msgAtomic {
			max = ni.limits.MaxFetchAtomicSize
		}
		if o.length > max {
			return fmt.Errorf("atomic of %d bytes above the limit %d", o.length, max)
		}
		if err := checkAtomic(o.atomOp, o.atomType, o.length, o.kind == msgSwap); err != nil {
			return err
		}
		if o.kind == msgSwap && o.atomOp >= eq.OpCSwap && len(operand) < o.atomType.Size() {
			return fmt.Errorf("%v needs an operand of %d bytes", o.atomOp, o.atomType.Size())
		}
	}
	return nil
}

// start validates and issues an initiator operation.
func (ni *NI) start(name string, o *initOp, target ProcessID, operand []byte) error {
	if o.md == nil || o.md.ni == nil || ((o.kind == msgFetch || o.kind == msgSwap) && o.getMD == nil) {
		return nilHandle(name, "descriptor")
	}
	if err := ni.check(name); err != nil {
		return err
	}
	if pr := ni.fastPeer(o, target); pr != nil {
		// A put or atomic without ack, eager, to a connected peer, with direct
		// access off: nothing here needs the engine lock (validate reads what
		// never changes after bind, and the released flag atomically), and
		// nothing answers it, so it needs no id (its header carries none).
		if err := ni.validate(o, operand); err != nil {
			code := ArgInvalid
			if errorsIsNotSupported(err) {
				code = Fail
			}
			return opErr(name, code, err)
		}
		o.pr = pr
		return ni.issueOrFail(name, o, operand)
	}
	ni.mu.Lock()
	var pr *peer
	for {
		if err := ni.validate(o, operand); err != nil {
			ni.mu.Unlock()
			code := ArgInvalid
			if errorsIsNotSupported(err) {
				code = Fail
			}
			return opErr(name, code, err)
		}
		var id ProcessID
		var ok bool
		if pr, id, ok = ni.peerOf(target); !ok {
			ni.mu.Unlock()
			return opErr(name, ArgInvalid, fmt.Errorf("no process %+v in the logical map", target))
		}
		if pr != nil {
			break
		}
		// The first operation to this target opens the connection (without the
		// engine lock: the answer needs progress); then the checks run again.
		ni.mu.Unlock()
		pr = ni.connectTo(id)
		ni.mu.Lock()
		if pr.broken.Load() {
			if err := ni.validate(o, operand); err != nil {
				continue // reported by the loop
			}
			break // unreachable: the operation completes with NI_UNDELIVERABLE
		}
	}
	if ni.direct != nil && !pr.broken.Load() && ni.directTry(o, pr, operand) {
		err := ni.directFault(name)
		ni.mu.Unlock() // done by direct access (direct_init.go)
		return err
	}
	ni.nextOp++
	o.id, o.pr = ni.nextOp, pr
	if (o.kind == msgPut || o.kind == msgAtomic) && o.ack == NoAckReq && o.length <= eagerMax {
		// Fire and forget: complete once the request left; nothing to track, and
		// o stays on the caller's stack.
		ni.directSent(pr, false)
		ni.mu.Unlock()
		return ni.issueOrFail(name, o, operand)
	}
	o.md.inflight++
	if o.getMD != nil {
		o.getMD.inflight++
	}
	h := copyOp(o)
	h.tracked = true
	ni.ops[h.id] = h
	ni.directSent(pr, true)
	ni.mu.Unlock()
	return ni.issueOrFail(name, h, operand)
}

// fastPeer returns the connection for an operation that may start without the
// engine lock (see start), or nil: then start takes the lock. The peer comes from
// the one-entry cache the locked lookups fill.
func (ni *NI) fastPeer(o *initOp, target ProcessID) *peer {
	if ni.direct != nil || o.ack != NoAckReq || o.length > eagerMax || o.getMD != nil ||
		(o.kind != msgPut && o.kind != msgAtomic) {
		return nil
	}
	pr := ni.lastFast.Load()
	if pr == nil {
		return nil
	}
	id := ProcessID{NID: target.NID, PID: target.PID}
	if ni.Logical() {
		lp := ni.logical.Load()
		if lp == nil || int64(target.Rank) >= int64(len(*lp)) {
			return nil // the locked path reports it
		}
		id = (*lp)[target.Rank]
	}
	if keyOf(pr.id) != keyOf(id) || pr.broken.Load() {
		return nil
	}
	return pr
}

// issueOrFail issues o; a peer that is gone completes it with failure events.
func (ni *NI) issueOrFail(name string, o *initOp, operand []byte) error {
	err := ni.issue(o, operand)
	if err != nil {
		ni.mu.Lock()
		defer ni.mu.Unlock()
		// issue fails only before the request was posted: the target never sees
		// it (write-after-write order for direct access, direct_init.go).
		ni.directUnsent(o.pr)
		if errors.Is(err, errPeerFailed) {
			ni.failOp(o)
			return nil
		}
		ni.finish(o)
		return opErr(name, Fail, err)
	}
	return nil
}

// issue sends the request message of o, inline or with the region of a long transfer.
func (ni *NI) issue(o *initOp, operand []byte) error {
	// The target knows the initiator by the connection, so the header does not
	// name it; an operation nothing answers (tracked false) needs no id either.
	// (field by field: see Put)
	var h header
	h.kind, h.ack, h.atomOp, h.atomType = o.kind, uint8(o.ack), uint8(o.atomOp), uint8(o.atomType)
	h.pt, h.uid, h.match, h.roff, h.length = uint32(o.pt), uint32(ni.proc.uid), o.match, o.roff, o.length
	h.hdrData, h.opid = o.hdrData, o.id
	var parts [4][]byte
	switch {
	case o.kind == msgGet && o.length <= eagerMax:
		return o.pr.send(&h)
	case o.length <= eagerMax && o.kind != msgGet:
		var pieces [][]byte
		if o.md.mem.IsRaw() {
			// Raw memory is read under fault protection before the provider sees it.
			buf := make([]byte, o.length)
			if _, err := o.md.mem.ReadAt(buf, o.localOff); err != nil {
				return err
			}
			pieces = append(parts[:0], buf)
		} else if o.md.flat != nil {
			// (validate checked the range against the descriptor)
			pieces = append(parts[:0], o.md.flat[o.localOff:o.localOff+o.length])
		} else {
			var err error
			if pieces, err = o.md.mem.Slices(o.localOff, o.length, parts[:0]); err != nil {
				return err
			}
		}
		if len(pieces) > 3 {
			buf := make([]byte, o.length)
			o.md.mem.ReadAt(buf, o.localOff)
			pieces = append(pieces[:0], buf)
		}
		if o.kind == msgSwap && o.atomOp >= eq.OpCSwap {
			h.flags |= hfOperand
			pieces = append(pieces, operand[:o.atomType.Size()])
		}
		if err := o.pr.send(&h, pieces...); err != nil {
			return err
		}
		ni.sent(o)
		return nil
	}
	// Long transfer: the target reads from (put) or writes into (get) our region,
	// whose segments the request names. A region of more segments than the request
	// can carry goes through a contiguous staging copy: a put's data is copied into
	// it now, a get's lands in it and is copied out before the REPLY event.
	reg, err := ni.registry()
	if err != nil {
		return err
	}
	mem, off := o.md.mem, o.localOff
	var stage []byte
	if o.md.mem.NumSegments() > maxRequestSegs {
		if pieces, _ := o.md.mem.Slices(o.localOff, o.length, nil); len(pieces) > maxRequestSegs {
			stage = make([]byte, o.length)
			if o.kind != msgGet {
				o.md.mem.ReadAt(stage, o.localOff)
			}
			mem, off = md.Bytes(stage), 0
		}
	}
	p, err := reg.Pin(mem, off, o.length)
	if err != nil {
		return err
	}
	segs := p.Remote(nil)
	if len(segs) > maxRequestSegs { // cannot happen: a staging copy is one segment
		p.Release()
		return fmt.Errorf("%d memory segments in one transfer (at most %d)", len(segs), maxRequestSegs)
	}
	buf := make([]byte, 16*len(segs))
	for i, s := range segs {
		putSeg(buf[16*i:], s)
	}
	ni.mu.Lock()
	if ni.ops[o.id] != o { // failed meanwhile (the peer died)
		ni.mu.Unlock()
		p.Release()
		return errPeerFailed
	}
	o.pinned, o.long, o.stage = p, true, stage
	ni.mu.Unlock()
	h.flags |= hfLong
	if o.kind == msgPut && pushPuts && !progressEnvOff {
		// (Without a progress goroutine we would write only when the application
		// calls in; the target must complete alone: it pulls.)
		h.flags |= hfPush
	}
	return o.pr.send(&h, buf)
}

// sent records that an eager request left: the SEND event, and completion of a put
// or atomic that expects no answer. Called without ni.mu.
func (ni *NI) sent(o *initOp) {
	if !o.tracked && !o.md.reportsSend() {
		return // fire and forget with nothing to report: no engine lock
	}
	ni.mu.Lock()
	defer ni.mu.Unlock()
	ni.sendEvent(o, eq.NIOK)
	if (o.kind == msgPut || o.kind == msgAtomic) && o.ack == NoAckReq {
		ni.finish(o)
	}
}

// reportsSend reports whether a SEND on m posts or counts anything: an event
// queue that takes successful SEND events, or a counter that counts them. The
// options, queue and counter of a descriptor never change after MDBind.
func (m *MD) reportsSend() bool {
	return (m.ct != nil && m.opts&MDEventCTSend != 0) ||
		(m.eq != nil && m.opts&(MDEventSuccessDisable|MDEventSendDisable) == 0)
}

// sendEvent posts o's SEND event once: from the sender after an eager request left,
// or from the answer's handler if that ran first. Called with ni.mu held.
func (ni *NI) sendEvent(o *initOp, fail eq.NIFail) {
	if o.sendDone || o.kind == msgGet {
		return
	}
	o.sendDone = true
	ni.initEvent(o, o.md, eq.EventSend, fail, o.length, o.roff, 0)
}

// finish forgets a completed operation. Called with ni.mu held.
func (ni *NI) finish(o *initOp) {
	if _, ok := ni.ops[o.id]; !ok {
		return
	}
	delete(ni.ops, o.id)
	ni.directFinished(o)
	o.md.inflight--
	if o.getMD != nil {
		o.getMD.inflight--
	}
	if o.pinned != nil {
		o.pinned.Release()
		o.pinned = nil
	}
	o.stage = nil
}

// initEvent posts and counts an initiator event on md's queue and counter, as the
// descriptor's options and the ack kind say. Called with ni.mu held.
func (ni *NI) initEvent(o *initOp, m *MD, kind eq.EventKind, fail eq.NIFail, mlength, roff uint64, list uint8) {
	ok := fail == eq.NIOK
	if kind == eq.EventReply && ok && o.kind == msgGet && o.stage != nil {
		// A get staged for its many segments: its data goes into place before the
		// event reports it.
		m.mem.WriteAt(o.stage[:min(mlength, uint64(len(o.stage)))], o.localOff)
	}
	if kind != eq.EventSend && o.kind >= msgAtomic && o.kind <= msgSwap {
		// An atomic applies whole elements only: its mlength counts those.
		if sz := uint64(o.atomType.Size()); sz > 0 {
			mlength -= mlength % sz
		}
	}
	if m.ct != nil {
		count := (kind == eq.EventSend && m.opts&MDEventCTSend != 0) ||
			(kind == eq.EventReply && m.opts&MDEventCTReply != 0) ||
			(kind == eq.EventAck && m.opts&MDEventCTAck != 0)
		if count {
			// Bytes when the descriptor counts them, except for an operation-completed
			// ack, which only ever counts operations.
			n := uint64(1)
			if m.opts&MDEventCTBytes != 0 && !(kind == eq.EventAck && o.ack == OCAckReq) {
				n = mlength
			}
			m.ct.count(ok, n)
		}
	}
	if m.eq == nil || (ok && m.opts&MDEventSuccessDisable != 0) ||
		(kind == eq.EventSend && m.opts&MDEventSendDisable != 0) ||
		(kind == eq.EventAck && o.ack != AckReqFull) {
		return
	}
	m.eq.q.Post(&eq.Event{Type: kind, UserPtr: o.userPtr, MLength: mlength, RLength: o.length,
		RemoteOffset: roff, PTIndex: uint32(o.pt), NIFail: fail, MatchBits: o.match, HdrData: o.hdrData,
		List: eq.List(list), AtomicOp: o.atomOp, AtomicType: o.atomType})
}

func errorsIsNotSupported(err error) bool { return errors.Is(err, ErrNotSupported) }

func putSeg(b []byte, s mdreg.RemoteSegment) {
	le.PutUint64(b, s.Addr)
	le.PutUint32(b[8:], uint32(s.Len))
	le.PutUint32(b[12:], s.RKey)
}

func getSeg(b []byte) mdreg.RemoteSegment {
	return mdreg.RemoteSegment{Addr: le.Uint64(b), Len: le.Uint32(b[8:]), RKey: le.Uint32(b[12:])}
}
