package soft

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/goportals/goportals/internal/bootstrap"
	"github.com/goportals/goportals/internal/verbs"
)

// The TCP path joins queue pairs on different nodes (another kernel, or another
// network namespace of this one), or any two when forced. One TCP stream carries
// one queue pair's traffic both ways, framed: a fixed header, then the payload.
// The target's progress applies RDMA WRITEs, READs and atomics itself, after the
// same key, bounds and rights checks as the shared-memory path, reading a large
// WRITE's payload straight from the socket into the registered memory and sending
// a READ's data straight from it (vectored I/O); every request is answered (ACK,
// NAK, data or the old value), so the initiator completes a work request only once
// the target has run it, as a reliable connection does.
//
// One goroutine per context, the poller (Linux: tcppoll_linux.go), reads the
// sockets: it waits in the kernel (epoll) until a socket holds data or has room
// for frames that wait, reads and serves what arrived, and pushes the
// completions, which wake the completion queues' waiters. While callers poll,
// the poller naps and their rounds look at the sockets' readiness (a poll with
// no timeout, which unlike a read does not take the socket's lock) and read
// what arrived without blocking. A busy link is looked at every round; an idle
// one (tcpHotLooks), one amid a large incoming frame, or one whose payload
// trickles in or whose frames wait for room is left alone for a short gap
// (tcpPollGap, tcpBulkIdleGap, tcpBulkGap): a spinning caller does not pay a
// system call per round for it, and a Poll never blocks.
// Requests are written by the goroutine that posts them, with the header and the
// payload, straight from the registered memory, in one vectored write; the ACK of a SEND or WRITE waits up
// to tcpAnswerDelay for the next frame the link sends and rides with it (a
// ping-pong's reply carries the ACK of the request it answers). Elsewhere a
// watcher goroutine per link wakes the context's progress goroutine when data
// arrives, and the context's progress reads the sockets without blocking.

// Frame kinds.
const (
	frSend = iota + 1
	frWrite
	frRead
	frFetchAdd
	frCmpSwap
	frAck     // SEND or WRITE done
	frNak     // request refused; status in the header
	frReadRsp // READ data follows
	frAtomRsp // old value in the header
)

// Frame flags.
const (
	ffImm = 1 << iota // the request carries an immediate value
)

const frameLen = 48

// smallWrite is the largest write that is gathered into one buffer on the stack
// and sent with one send(2): by sendNow for a small message, and by writev on
// Linux (a frame header and a small inline payload fit).
const smallWrite = 512

// frame is a frame header. token matches a response to its request.
type frame struct {
	kind, flags uint8
	status      uint8
	n           uint32 // payload bytes (or bytes asked for by a READ)
	token       uint64
	raddr       uint64
	rkey        uint32
	imm         uint32
	a, b        uint64 // atomic operands; a is the old value in an answer
}

func (f *frame) put(b []byte) {
	b[0], b[1], b[2], b[3] = f.kind, f.flags, f.status, 0
	binary.LittleEndian.PutUint32(b[4:], f.n)
	binary.LittleEndian.PutUint64(b[8:], f.token)
	binary.LittleEndian.PutUint64(b[16:], f.raddr)
	binary.LittleEndian.PutUint32(b[24:], f.rkey)
	binary.LittleEndian.PutUint32(b[28:], f.imm)
	binary.LittleEndian.PutUint64(b[32:], f.a)
	binary.LittleEndian.PutUint64(b[40:], f.b)
}

func (f *frame) get(b []byte) {
	f.kind, f.flags, f.status = b[0], b[1], b[2]
	f.n = binary.LittleEndian.Uint32(b[4:])
	f.token = binary.LittleEndian.Uint64(b[8:])
	f.raddr = binary.LittleEndian.Uint64(b[16:])
	f.rkey = binary.LittleEndian.Uint32(b[24:])
	f.imm = binary.LittleEndian.Uint32(b[28:])
	f.a = binary.LittleEndian.Uint64(b[32:])
	f.b = binary.LittleEndian.Uint64(b[40:])
}

// maxFrame bounds a payload: the device's largest message.
const maxFrame = 1 << 30

// outItem is one frame to send: its header and the payload parts (memory of
// registered regions, held until written).
type outItem struct {
	hdr   [frameLen]byte
	parts [][]byte
	holds []*int32
	fence bool // held behind a fence
	read  bool // a READ or atomic (counted in tcpLink.reads)
	pool  bool // from the link's free list: goes back once written
	// part and hold back parts and holds (up to their length: no allocation
	// per frame); inl backs an inline SEND's copy of its payload.
	part [4][]byte
	hold [4]*int32
	inl  []byte
}

// tcpPending is a request waiting for its answer.
type tcpPending struct {
	wr     verbs.SendWR
	local  [][]byte // READ and atomic results land here
	holds  []*int32
	signal bool
	part   [4][]byte // back local and holds
	hold   [4]*int32
}

// rxState is the frame being received.
type rxState struct {
	waitRecv  bool      // the SEND in f waits for a posted receive
	waitSince time.Time // since when
	hdr       [frameLen]byte
	have      int // header bytes received
	f         frame
	body      bool     // receiving the payload
	dst       [][]byte // where the payload goes; a nil part is discarded
	di        int
	doff      int
	left      uint32   // payload bytes still to come
	holds     []*int32 // regions held while the payload lands
	act       uint8    // what to do once the payload is in (act*)
	tok       uint64   // the request's token
	st        verbs.Status
	recvID    uint64 // the receive a SEND consumed
	msg       bool   // f is a message (tcpmsg.go): its payload is (or comes) at rb[rbR:]
	pushed    bool   // a receive completion was pushed since the last message was held
	behind    bool   // the held message came after such a completion (tcpmsg.go)
	// kept: the link failed with messages held; it stays in the context's
	// links until PollMessages took them. failLater: broken's report of the
	// failure waits for that too (tcpmsg.go).
	kept, failLater bool
}

// What follows a received payload.
const (
	actNone    = iota
	actNak     // answer NAK with rx.st
	actWrite   // an RDMA WRITE landed: ACK (after the immediate's receive)
	actSend    // a SEND landed in receive rx.recvID: complete it, then ACK or NAK
	actReadRsp // a READ's data landed: complete the request
)

// tcpLink is a queue pair's TCP stream.
type tcpLink struct {
	q         *qp
	conn      io.Closer // the stream (nil until the peer's connection arrives)
	fd        int
	peerQPN   uint32
	peerNonce uint64

	// txMu guards the frames to send and the position in the first one.
	// Locks nest in this order: rxMu, the queue pair's mu, pmu, txMu (then
	// the context's c.mu, the look set's and the poller's locks). txPend: a
	// flush found txMu taken and left the queued frames to its holder (see
	// flushTx, unlockTx).
	txMu   sync.Mutex
	txPend atomic.Bool
	out    []*outItem
	outOff int // bytes of out[0] (header then parts) already written
	iov    [][]byte
	free   []*outItem // answers' items for reuse

	// rxMu guards the receive side; progress takes it with TryLock.
	rxMu sync.Mutex
	rx   rxState
	rb   []byte // staging for small frames
	rbR  int
	rbW  int

	pmu     sync.Mutex
	pending map[uint64]*tcpPending
	order   []uint64 // tokens in post order, for in-order completion on failure
	next    uint64
	reads   int           // READs and atomics awaiting their answer
	pfree   []*tcpPending // records for reuse
	held    []*outItem    // frames behind a fence, waiting for reads to finish

	// Socket calls: reads, reads that found nothing, writes (vectored, or a
	// small message's send), looks at the socket's readiness (caller's poll
	// rounds).
	nReads, nEmpty, nWrites, nLooks atomic.Uint64
	// nSendRest counts the messages sendNow left partly or wholly to the
	// queue: the socket had no room for all of the frame.
	nSendRest atomic.Uint64

	// viaPoller: the context's poller reads the socket (set before the link
	// runs). txWait: frames wait for room in the socket. ackDue: when an answer
	// queued to ride the next write must go anyway (tcpClock; 0: none waits).
	viaPoller bool
	txWait    atomic.Bool
	ackDue    atomic.Int64
	nextLook  atomic.Int64  // poll rounds skip the socket until then (tcpClock; 0: no gap)
	thin      atomic.Bool   // the last read of a large payload was small (tcpBulkGap)
	bulkUntil atomic.Int64  // a large incoming frame is partly received (until then at most: tcpClock; 0: none)
	quiet     atomic.Uint32 // looks that found the socket empty since the link last received
	epIn      uint32        // the poller's registered interest (epoll events; poller only)
	// inSet: the link has slot in the context's look set (set before the
	// link is listed, never changed after); armed: its socket is in the set
	// (while the link is idle: setArm, setDisarm, under the set's mu).
	inSet bool
	slot  int32
	armed atomic.Bool
	noArm atomic.Bool // the kernel refused to add its socket to the set
	// setReads counts the reads the context's look at the set made of it
	// (for the tests).
	setReads atomic.Uint64

	failed atomic.Bool
	// ended: the link was found lost (lost: a read met an error or the end
	// of the stream, a frame broke the protocol, or the poller's set refused
	// the socket). Until broken marks it failed, its socket is neither read
	// nor looked at nor watched again. Set under rxMu.
	ended   atomic.Bool
	dead    atomic.Bool // a completion already reported the peer's loss
	stalled atomic.Bool // an incoming SEND waits for a posted receive
	msgHeld atomic.Bool // a message waits for PollMessages in rb (tcpmsg.go)
	rbLeft  atomic.Bool // frames wait in rb after the messages PollMessages took
	done    chan struct{}
	once    sync.Once
	wg      sync.WaitGroup
}

// stageSize is the receive staging buffer; payloads larger than directRead go
// straight from the socket to their destination.
const (
	stageSize  = 64 << 10
	directRead = 4 << 10
)

// start runs the link over conn (q.mu held): frames queued before go first.
func (l *tcpLink) start(conn net.Conn) {
	tc, ok := conn.(*net.TCPConn)
	if !ok {
		conn.Close()
		go l.broken(errors.New("not a TCP connection")) // it takes q.mu
		return
	}
	tc.SetNoDelay(true)
	tc.SetKeepAliveConfig(net.KeepAliveConfig{Enable: true, Idle: 5 * time.Second, Interval: time.Second, Count: 5})
	rc, err := tc.SyscallConn()
	if err == nil {
		err = rc.Control(func(fd uintptr) { l.fd = int(fd) })
	}
	if err == nil {
		err = setUserTimeout(l.fd)
	}
	if err == nil {
		err = setCongestion(l.fd)
	}
	if err != nil {
		conn.Close()
		go l.broken(err)
		return
	}
	c := l.q.ctx
	var closer io.Closer = conn
	fd, via := l.fd, false
	if c.usePoller() {
		// The socket leaves Go's network poller (its descriptor is in the
		// runtime's epoll set, whose idle thread the kernel would wake at every
		// segment that arrives, for nobody): the link keeps a duplicate of the
		// descriptor and closes the connection.
		dup, err := dupFD(l.fd)
		if err != nil {
			c.leavePoller()
			conn.Close()
			go l.broken(err)
			return
		}
		conn.Close()
		fd, via, closer = dup, true, fdCloser(dup)
	}
	rb := make([]byte, stageSize)
	// The link may have been shut meanwhile (its queue pair destroyed while the
	// peer's hello was answered): shut sets failed before it takes txMu, so
	// either it is seen here, or shut waits and then undoes all of this.
	l.txMu.Lock()
	if l.failed.Load() {
		l.txMu.Unlock()
		closer.Close()
		if via {
			c.leavePoller()
		}
		return
	}
	l.fd, l.viaPoller, l.rb, l.conn = fd, via, rb, closer
	if via {
		c.setAdd(l)
	}
	c.addLink(l)
	if !via {
		l.wg.Add(1) // before shut returns: close waits for the watcher
	}
	l.txMu.Unlock()
	if via {
		c.wakePoller()
	} else {
		go l.watch(rc)
	}
	l.flushTx()
}

// watch wakes the context's progress goroutine whenever the socket turns
// readable; the reading itself is progress's.
func (l *tcpLink) watch(rc syscall.RawConn) {
	defer l.wg.Done()
	for !l.failed.Load() {
		first := true
		err := rc.Read(func(uintptr) bool {
			if first {
				first = false
				return false // wait for readability
			}
			return true
		})
		if err != nil || l.failed.Load() {
			return
		}
		l.q.ctx.kick()
		// Let progress drain before waiting for the next edge.
		select {
		case <-l.done:
			return
		case <-time.After(50 * time.Microsecond):
		}
	}
}

// broken fails the link: outstanding work completes with StatusRetryExceeded (the
// peer stopped answering) and the queue pair enters the error state.
func (l *tcpLink) broken(err error) {
	l.shut()
	l.rxMu.Lock()
	later := l.rx.kept
	if later {
		// Messages received whole before the failure go out first: the
		// PollMessages that takes the last of them reports it (fail).
		l.rx.failLater = true
	}
	l.rxMu.Unlock()
	if !later {
		l.fail()
	}
}

// fail reports a link's failure: outstanding work completes with
// StatusRetryExceeded, posted receives flushed, and the queue pair enters the
// error state.
func (l *tcpLink) fail() {
	q := l.q
	q.mu.Lock()
	if q.State() == verbs.QPReady {
		q.state.Store(uint32(verbs.QPError))
	}
	l.flush(verbs.StatusRetryExceeded)
	for ; q.rqHead < q.rqTail; q.rqHead++ {
		e := &q.rq[q.rqHead%uint64(len(q.rq))]
		q.rcq.push(verbs.WorkCompletion{ID: e.id, Status: verbs.StatusWorkRequestFlushed, Opcode: verbs.WCRecv, QPNum: q.num})
	}
	q.mu.Unlock()
}

// shut stops the link's I/O once: the socket closes only when no progress round
// is using its descriptor.
func (l *tcpLink) shut() {
	l.once.Do(func() {
		l.failed.Store(true)
		close(l.done)
		l.rxMu.Lock()
		l.txMu.Lock()
		if l.conn != nil {
			l.q.ctx.setRemove(l)
			l.conn.Close()
		}
		for _, it := range l.out {
			releaseAll(it.holds)
		}
		l.out = nil
		if l.ackDue.Swap(0) != 0 {
			l.q.ctx.tcp.acks.Add(-1)
		}
		l.txMu.Unlock()
		releaseAll(l.rx.holds)
		l.rx.holds = nil
		// Messages held whole in the staging buffer stay for PollMessages
		// (not when the queue pair is being destroyed).
		keep := l.msgHeld.Load() && !l.dead.Load()
		l.rx.kept = keep
		l.rxMu.Unlock()
		l.pmu.Lock()
		for _, it := range l.held {
			releaseAll(it.holds)
		}
		l.held = nil
		l.pmu.Unlock()
		if !keep {
			l.q.ctx.removeLink(l)
		}
		if l.viaPoller {
			l.q.ctx.leavePoller()
		}
	})
}

// flush completes every outstanding request: the first with st, the rest flushed.
func (l *tcpLink) flush(st verbs.Status) {
	l.pmu.Lock()
	order := l.order
	l.order = nil
	pend := l.pending
	l.pending = map[uint64]*tcpPending{}
	l.pmu.Unlock()
	for _, tok := range order {
		p := pend[tok]
		if p == nil {
			continue
		}
		releaseAll(p.holds)
		if st == verbs.StatusRetryExceeded {
			if l.dead.Swap(true) {
				st = verbs.StatusWorkRequestFlushed
			}
		}
		l.q.scq.push(verbs.WorkCompletion{ID: p.wr.ID, Status: st, Opcode: verbs.OpcodeOf(p.wr.Opcode), QPNum: l.q.num})
		st = verbs.StatusWorkRequestFlushed
	}
}

// close ends the link (the queue pair is being destroyed): its work is flushed.
func (l *tcpLink) close() {
	l.dead.Store(true)
	l.shut()
	l.rxMu.Lock()
	kept := l.rx.kept
	l.rx.kept, l.rx.failLater = false, false
	l.rxMu.Unlock()
	if kept {
		l.q.ctx.removeLink(l)
	}
	l.wg.Wait()
	l.flush(verbs.StatusWorkRequestFlushed)
}

// jobKey, when set (SetJobKey), is the secret a TCP peer must present in place
// of the job's (bootstrap.JobKey).
var jobKey atomic.Pointer[[]byte]

// SetJobKey sets the key TCP connections present and check, in place of the key
// of the job the process joined (bootstrap.JobKey, which the provider follows
// otherwise): a peer whose hello carries another key is refused. nil goes back
// to following the job's key.
func SetJobKey(key []byte) {
	if key == nil {
		jobKey.Store(nil)
		return
	}
	k := append([]byte(nil), key...)
	jobKey.Store(&k)
}

// currentKey returns the key to present and check, and whether it is known: a
// process of a job whose key is not yet known (before its first fence under a
// launcher that hands out no secret) can neither connect nor be connected to.
func currentKey() ([]byte, bool) {
	if k := jobKey.Load(); k != nil {
		return *k, true
	}
	return bootstrap.JobKey()
}
