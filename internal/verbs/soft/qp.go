package soft

import (
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/goportals/goportals/internal/verbs"
)

// Send entry states.
const (
	esQueued    = iota // posted, not yet issued
	esIssuing          // partly issued (fragments of a long SEND, or the immediate of a CMA write)
	esAwaitTail        // in the ring: done once the peer consumed past endPos
	esAwaitResp        // waiting for a READ or atomic response
	esDone
)

type sendEntry struct {
	wr      verbs.SendWR
	sg      []verbs.SGE // copy of wr.SG (cap MaxSGE)
	inline  []byte      // payload copied at post for SendInline
	total   uint64
	token   uint64
	state   uint8
	off     uint64 // bytes issued so far
	endPos  uint64
	status  verbs.Status
	byteLen uint32
}

type recvEntry struct {
	id    uint64
	sg    []verbs.SGE
	total uint64
}

// peerConn is the connected peer: its process, segment and outbound ring.
type peerConn struct {
	pid   int
	pidfd pidfd
	seg   *shm
	view  segView
	ring  *shm
	pd    uint32
	// own is the context itself when the queue pair is joined to its own
	// context (an NI's connection to its own process), whose progress
	// goroutine may sleep parked, out of reach of the futex word (see
	// Context.run and wakePeer); nil otherwise.
	own *Context
}

// qp is a reliable-connected queue pair. Each direction is a ring in the sender's
// memfd (ours: out, the peer's: in).
type qp struct {
	ctx      *Context
	pd       *pd
	num      uint32
	scq, rcq *cq
	maxSGE   int
	// ownPeer is set at Connect, before the queue pair joins the active set,
	// when its peer is this context itself (peerConn.own).
	ownPeer atomic.Bool

	mu       sync.Mutex
	state    atomic.Uint32
	outShm   *shm
	out      *ring
	in       *ring
	peer     *peerConn
	addr     verbs.Address
	sq       []sendEntry
	sqHead   uint64      // oldest not completed
	sqIss    uint64      // next to issue
	sqTail   uint64      // next free
	waiting  int         // entries awaiting a response (for SendFence)
	signaled int         // signaled entries not yet completed
	busy     atomic.Bool // see updateBusy
	refused  bool        // the message being handled was NAKed
	peerDead bool        // the peer process exited
	cmaDone  bool        // issue ran a cross-memory transfer
	memPos   uint64      // outbound ring position after our last WRITE or atomic through the ring
	dead     atomic.Bool // peerDead, readable without the lock
	rq       []recvEntry
	rqHead   uint64
	rqTail   uint64
	recvOn   bool   // a fragmented SEND is being received into rq[rqHead]
	recvOff  uint64 // bytes of it received
	stalled  bool   // the last drain stopped at a message that waits for a receive
	pend     []pending
	parts    [][]byte
	holds    []*int32
	link     *tcpLink // the TCP path, when the peer is on another node

	// message mode (messages.go): set by EnableMessages before Connect
	msgOn  atomic.Bool
	msgTag uint64
	msgMax uint32
	msgBuf []byte // a message that wraps around the ring's end is copied here
	// msgWait is set by a drain that stopped at a message and cleared by the
	// PollMessages that handed out the last one: while it is set, a peer that
	// closed or exited does not fail the queue pair yet (its last messages,
	// its answers, are handed out first, as drain applies them before failing).
	msgWait atomic.Bool
}

// pending is a response waiting for ring space.
type pending struct {
	m    msg
	data []byte
}

// CreateQP creates a queue pair with its outbound ring.
func (p *pd) CreateQP(a verbs.QPAttr) (verbs.QP, error) {
	c := p.ctx
	scq, ok1 := a.SendCQ.(*cq)
	rcq, ok2 := a.RecvCQ.(*cq)
	if !ok1 || !ok2 || scq.ctx != c || rcq.ctx != c || scq.closed.Load() || rcq.closed.Load() || a.MaxSendWR < 0 || a.MaxRecvWR < 0 || a.MaxSGE < 0 ||
		a.MaxSendWR > maxQPWR || a.MaxRecvWR > maxQPWR || a.MaxSGE > attr.MaxSGE {
		return nil, verbs.Errorf("create_qp", verbs.ErrInvalidArgument, nil)
	}
	if c.closed.Load() || p.dead.Load() {
		return nil, verbs.Errorf("create_qp", verbs.ErrClosed, nil)
	}
	ns, nr, ng := a.MaxSendWR, a.MaxRecvWR, a.MaxSGE
	if ns == 0 {
		ns = defaultSendWR
	}
	if nr == 0 {
		nr = defaultRecvWR
	}
	if ng == 0 {
		ng = defaultSGE
	}
	c.mu.Lock()
	if len(c.qps) >= maxQPs {
		c.mu.Unlock()
		return nil, verbs.Errorf("create_qp", verbs.ErrNoResources, nil)
	}
	c.nextQP++
	num := c.nextQP
	c.mu.Unlock()
	rs, err := newShm(fmt.Sprintf("goportals-qp%d", num), ringFileSize)
	if err != nil {
		return nil, verbs.Errorf("create_qp", verbs.ErrNoResources, err)
	}
	q := &qp{ctx: c, pd: p, num: num, scq: scq, rcq: rcq, maxSGE: ng, outShm: rs, out: newRing(rs.mem),
		sq: make([]sendEntry, ns), rq: make([]recvEntry, nr)}
	q.out.setOwner(num, c.nonce)
	for i := range q.sq {
		q.sq[i].sg = make([]verbs.SGE, 0, ng)
	}
	for i := range q.rq {
		q.rq[i].sg = make([]verbs.SGE, 0, ng)
	}
	c.listen()
	q.addr = address{pid: uint32(c.pid), segFd: int32(c.seg.fd), ringFd: int32(rs.fd), qpn: num, pd: p.id,
		nonce: c.nonce, boot: bootID(), netns: netnsID(), tcpIP: c.tcp.ip, tcpPort: c.tcp.port}.encode()
	scq.refs.Add(1)
	rcq.refs.Add(1)
	p.nqp.Add(1)
	c.mu.Lock()
	c.qps[q] = struct{}{}
	c.mu.Unlock()
	return q, nil
}

// Num returns the queue pair number.
func (q *qp) Num() uint32 { return q.num }

// Address returns the connection address.
func (q *qp) Address() verbs.Address { return append(verbs.Address(nil), q.addr...) }

// State returns the state.
func (q *qp) State() verbs.QPState { return verbs.QPState(q.state.Load()) }

// Connect maps the peer's segment and outbound ring.
func (q *qp) Connect(remote verbs.Address) error {
	a, ok := decodeAddress(remote)
	if !ok {
		return verbs.Errorf("connect", verbs.ErrInvalidArgument, nil)
	}
	force, err := forceTCP()
	if err != nil {
		return verbs.Errorf("connect", verbs.ErrInvalidArgument, err)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.State() != verbs.QPInit {
		return verbs.Errorf("connect", verbs.ErrQPState, nil)
	}
	// PTL_SOFT_PATH=tcp joins two contexts over TCP even in one process, but
	// not a context to itself (an NI's connection to its own process): that
	// is never between nodes, and a stream to itself would only add a socket
	// for every poll round to read.
	own := int(a.pid) == q.ctx.pid && a.nonce == q.ctx.nonce
	if (force && !own) || a.boot != bootID() || a.netns != netnsID() {
		if err := checkCongestion(); err != nil {
			return verbs.Errorf("connect", verbs.ErrInvalidArgument, err)
		}
		return q.connectTCP(a)
	}
	pfd, err := openPidfd(int(a.pid))
	if err != nil {
		return verbs.Errorf("connect", verbs.ErrUnreachable, err)
	}
	seg, err := openPeerShm(int(a.pid), int(a.segFd), segSize)
	if err != nil {
		pfd.close()
		return verbs.Errorf("connect", verbs.ErrUnreachable, err)
	}
	view := segView{seg.mem}
	if !view.valid(int(a.pid), a.nonce) {
		seg.close()
		pfd.close()
		return verbs.Errorf("connect", verbs.ErrUnreachable, fmt.Errorf("stale or foreign segment"))
	}
	rs, err := openPeerShm(int(a.pid), int(a.ringFd), ringFileSize)
	if err != nil {
		seg.close()
		pfd.close()
		return verbs.Errorf("connect", verbs.ErrUnreachable, err)
	}
	in := newRing(rs.mem)
	if qpn, nonce := in.owner(); qpn != a.qpn || nonce != a.nonce {
		rs.close()
		seg.close()
		pfd.close()
		return verbs.Errorf("connect", verbs.ErrUnreachable, fmt.Errorf("queue pair %d no longer exists", a.qpn))
	}
	q.peer = &peerConn{pid: int(a.pid), pidfd: pfd, seg: seg, view: view, ring: rs, pd: a.pd}
	if own {
		q.peer.own = q.ctx
		q.ownPeer.Store(true)
	}
	q.in = in
	in.prefault()
	q.out.prefault()
	q.state.Store(uint32(verbs.QPReady))
	q.ctx.addActive(q)
	return nil
}

// PostRecv queues receives.
func (q *qp) PostRecv(wrs []verbs.RecvWR) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	for i := range wrs {
		wr := &wrs[i]
		st := q.State()
		if st == verbs.QPClosed {
			return verbs.Errorf(postOp("post_recv", i), verbs.ErrClosed, nil)
		}
		if len(wr.SG) > q.maxSGE {
			return verbs.Errorf(postOp("post_recv", i), verbs.ErrInvalidArgument, nil)
		}
		if q.rqTail-q.rqHead == uint64(len(q.rq)) {
			return verbs.Errorf(postOp("post_recv", i), verbs.ErrNoResources, nil)
		}
		if st == verbs.QPError {
			q.rcq.push(verbs.WorkCompletion{ID: wr.ID, Status: verbs.StatusWorkRequestFlushed, Opcode: verbs.WCRecv, QPNum: q.num})
			continue
		}
		e := &q.rq[q.rqTail%uint64(len(q.rq))]
		e.id = wr.ID
		e.sg = append(e.sg[:0], wr.SG...)
		e.total = verbs.TotalLength(wr.SG)
		q.rqTail++
	}
	if q.stalled && q.in != nil && q.in.ready() {
		// A message waits for this receive, and the progress round that found it
		// may have gone to sleep. (Only then: a kick per receive would cost every
		// message of a stream a channel send and a look at the sleep word.)
		q.ctx.kick()
	}
	if q.link != nil && q.link.stalled.Load() {
		q.ctx.kick() // an incoming SEND waits for this receive
	}
	return nil
}

var errSendQueueFull = &verbs.OpError{Op: "post_send", Err: verbs.ErrNoResources}

func postOp(op string, i int) string {
	if i == 0 {
		return op
	}
	return fmt.Sprintf("%s (work request %d)", op, i)
}

// PostSend queues send work requests and issues what fits at once. On an error the
// requests before the failing one stay posted.
func (q *qp) PostSend(wrs []verbs.SendWR) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.link != nil {
		return q.link.postSend(wrs)
	}
	if len(wrs) == 1 && q.sendNow(&wrs[0]) {
		q.updateBusy()
		return nil
	}
	err := q.postSend(wrs)
	q.cmaDone = false
	q.issue()
	if q.cmaDone && q.State() == verbs.QPReady {
		// A cross-memory transfer finished inside this call: complete it now. Only
		// reap: NAKs live in the control page, and the inbound ring is drained by
		// progress rounds alone (under the context's progress lock).
		q.reap(q.out.consumed())
	}
	q.updateBusy()
	return err
}

// sendNow is PostSend's fast path for the engine's messages: one inline SEND that
// fits in the header slot's ring message, with nothing queued ahead of it, goes
// straight from the caller's memory into the ring; its send queue entry keeps
// only what completion needs. It reports false, having changed nothing, for
// anything else (then postSend and issue take the request).
func (q *qp) sendNow(wr *verbs.SendWR) bool {
	if wr.Opcode != verbs.OpSend || wr.Flags&(verbs.SendInline|verbs.SendFence) != verbs.SendInline ||
		len(wr.SG) > q.maxSGE || q.sqIss != q.sqTail || q.sqTail-q.sqHead == uint64(len(q.sq)) ||
		q.State() != verbs.QPReady || q.out == nil || q.peerDead || atomic.LoadUint32(q.in.closedWord()) != 0 {
		return false
	}
	total := verbs.TotalLength(wr.SG)
	if total > maxInline || !q.room(int(total-min(total, hdrInline))) {
		return false
	}
	q.parts = q.parts[:0]
	for _, s := range wr.SG {
		if s.Length > 0 {
			q.parts = append(q.parts, unsafe.Slice((*byte)(addrPtr(s.Addr)), s.Length))
		}
	}
	e := &q.sq[q.sqTail%uint64(len(q.sq))]
	e.wr = verbs.SendWR{ID: wr.ID, Opcode: wr.Opcode, Flags: wr.Flags}
	e.sg, e.inline = e.sg[:0], e.inline[:0]
	e.total, e.token, e.off, e.status = total, q.sqTail+1, 0, verbs.StatusSuccess
	m := msg{op: opSend, flags: flFirst | flLast | flHdr, token: e.token}
	e.endPos = q.out.pushInline(&m, q.parts, int(total))
	clear(q.parts)
	q.parts = q.parts[:0]
	e.state, e.byteLen = esAwaitTail, uint32(total)
	if wr.Flags&verbs.SendSignaled != 0 {
		q.signaled++
	}
	q.sqTail++
	q.sqIss++
	wakePeer(q.peer)
	return true
}

func (q *qp) postSend(wrs []verbs.SendWR) error {
	for i := range wrs {
		wr := &wrs[i]
		st := q.State()
		switch st {
		case verbs.QPClosed:
			return verbs.Errorf(postOp("post_send", i), verbs.ErrClosed, nil)
		case verbs.QPInit:
			return verbs.Errorf(postOp("post_send", i), verbs.ErrQPState, nil)
		}
		if err := q.validate(wr); err != nil {
			return verbs.Errorf(postOp("post_send", i), verbs.ErrInvalidArgument, err)
		}
		if q.sqTail-q.sqHead == uint64(len(q.sq)) {
			if i == 0 {
				return errSendQueueFull // a caller that polls and retries allocates nothing
			}
			return verbs.Errorf(postOp("post_send", i), verbs.ErrNoResources, nil)
		}
		if st == verbs.QPError {
			q.scq.push(verbs.WorkCompletion{ID: wr.ID, Status: verbs.StatusWorkRequestFlushed,
				Opcode: verbs.OpcodeOf(wr.Opcode), QPNum: q.num})
			continue
		}
		e := &q.sq[q.sqTail%uint64(len(q.sq))]
		e.wr = *wr
		e.sg = append(e.sg[:0], wr.SG...)
		e.wr.SG = nil
		e.total = verbs.TotalLength(wr.SG)
		e.token = q.sqTail + 1
		e.state, e.off, e.endPos, e.status, e.byteLen = esQueued, 0, 0, verbs.StatusSuccess, 0
		if wr.Flags&verbs.SendInline != 0 {
			e.inline = e.inline[:0]
			for _, s := range wr.SG {
				if s.Length > 0 {
					e.inline = append(e.inline, unsafe.Slice((*byte)(addrPtr(s.Addr)), s.Length)...)
				}
			}
		}
		if wr.Flags&verbs.SendSignaled != 0 {
			q.signaled++
		}
		q.sqTail++
	}
	return nil
}

// addrPtr turns a user-supplied address into a pointer (inline sends only: the
// caller guarantees the memory is live for the duration of PostSend).
func addrPtr(a uint64) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&a)) }

func (q *qp) validate(wr *verbs.SendWR) error {
	if wr.Opcode > verbs.OpAtomicCmpSwap {
		return fmt.Errorf("unknown opcode %d", wr.Opcode)
	}
	if len(wr.SG) > q.maxSGE {
		return fmt.Errorf("%d SGEs, at most %d", len(wr.SG), q.maxSGE)
	}
	total := verbs.TotalLength(wr.SG)
	if total > attr.MaxMsgSize {
		return fmt.Errorf("message of %d bytes exceeds %d", total, attr.MaxMsgSize)
	}
	if wr.Flags&verbs.SendInline != 0 {
		if total > maxInline {
			return fmt.Errorf("inline payload of %d bytes exceeds %d", total, maxInline)
		}
		if wr.Opcode == verbs.OpRDMARead || wr.Opcode >= verbs.OpAtomicFetchAdd {
			return fmt.Errorf("inline %v", wr.Opcode)
		}
	}
	if wr.Opcode >= verbs.OpAtomicFetchAdd {
		if len(wr.SG) != 1 || wr.SG[0].Length != 8 {
			return fmt.Errorf("atomics need one 8-byte SGE")
		}
	}
	return nil
}

// Close destroys the queue pair; outstanding work completes flushed.
func (q *qp) Close() error {
	if q.State() == verbs.QPClosed {
		return verbs.Errorf("destroy_qp", verbs.ErrClosed, nil)
	}
	q.destroy()
	return nil
}

func (q *qp) destroy() {
	q.mu.Lock()
	l := q.link
	q.mu.Unlock()
	if l != nil {
		l.close() // stops its goroutines (which take q.mu), completes its work
	}
	q.ctx.progMu.Lock() // no progress round may be using the queue pair
	q.mu.Lock()
	if q.State() == verbs.QPClosed {
		q.mu.Unlock()
		q.ctx.progMu.Unlock()
		return
	}
	q.fail(verbs.StatusWorkRequestFlushed)
	q.state.Store(uint32(verbs.QPClosed))
	q.ctx.removeActive(q)
	if q.peer != nil {
		q.peer.seg.close()
		q.peer.ring.close()
		q.peer.pidfd.close()
		q.peer = nil
		q.in = nil
	}
	q.out.setOwner(0, 0)
	q.outShm.close()
	q.out = nil
	q.mu.Unlock()
	q.ctx.progMu.Unlock()
	q.scq.refs.Add(-1)
	q.rcq.refs.Add(-1)
	q.pd.nqp.Add(-1)
	q.ctx.mu.Lock()
	delete(q.ctx.qps, q)
	q.ctx.mu.Unlock()
}

// fail moves the queue pair to the error state: the oldest outstanding send gets
// first (unless it already has an error), the rest of both queues complete flushed,
// and the peer is told through the ring's control page. Called with q.mu held.
func (q *qp) fail(first verbs.Status) {
	if q.State() == verbs.QPError || q.State() == verbs.QPClosed {
		return
	}
	q.state.Store(uint32(verbs.QPError))
	if q.out != nil {
		atomic.StoreUint32(q.out.closedWord(), 1)
	}
	for ; q.sqHead < q.sqTail; q.sqHead++ {
		e := &q.sq[q.sqHead%uint64(len(q.sq))]
		if e.state != esDone {
			e.status, first = first, verbs.StatusWorkRequestFlushed
		} else if e.status == verbs.StatusSuccess && e.wr.Flags&verbs.SendSignaled == 0 {
			continue
		}
		q.scq.push(verbs.WorkCompletion{ID: e.wr.ID, Status: e.status, Opcode: verbs.OpcodeOf(e.wr.Opcode),
			ByteLen: e.byteLen, QPNum: q.num})
	}
	q.sqIss = q.sqTail
	q.waiting, q.signaled = 0, 0
	q.busy.Store(false)
	for ; q.rqHead < q.rqTail; q.rqHead++ {
		e := &q.rq[q.rqHead%uint64(len(q.rq))]
		q.rcq.push(verbs.WorkCompletion{ID: e.id, Status: verbs.StatusWorkRequestFlushed, Opcode: verbs.WCRecv, QPNum: q.num})
	}
	// (recvOn is left as it is: only a ready queue pair reads it, and
	// PollMessages reads it without q.mu, under the progress lock that every
	// other writer holds, while fail may run in any thread that posts.)
	q.pend = q.pend[:0]
	if q.peer != nil {
		wakePeer(q.peer)
	}
}

// peerGone handles a peer that exited or closed its queue pair: work in flight
// completes with retry exceeded, the rest flushed. Called with q.mu held.
func (q *qp) peerGone() {
	if q.State() != verbs.QPReady {
		return
	}
	q.fail(verbs.StatusRetryExceeded)
}

// wakePeer wakes the peer's progress goroutine if it sleeps.
func wakePeer(p *peerConn) {
	if o := p.own; o != nil && o.parked.Load() && o.parked.CompareAndSwap(true, false) {
		o.wakeOwn() // it sleeps parked (see Context.run)
	}
	w := p.view.sleepWord()
	if atomic.LoadUint32(w) == 1 && atomic.CompareAndSwapUint32(w, 1, 0) {
		futexWake(w)
	}
}
