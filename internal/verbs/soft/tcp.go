package soft

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

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
// the poller naps and their rounds read the sockets without blocking, leaving an
// empty socket alone for a short gap (tcpPollGap, tcpBulkGap): a spinning
// caller does not pay a system call per round, and a Poll never blocks.
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
	txMu   sync.Mutex
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

	// Socket calls: reads, reads that found nothing, vectored writes.
	nReads, nEmpty, nWrites atomic.Uint64

	// viaPoller: the context's poller reads the socket (set before the link
	// runs). txWait: frames wait for room in the socket. ackDue: when an answer
	// queued to ride the next write must go anyway (tcpClock; 0: none waits).
	viaPoller bool
	txWait    atomic.Bool
	ackDue    atomic.Int64
	nextLook  atomic.Int64 // poll rounds skip the socket until then (tcpClock; 0: no gap)
	thin      atomic.Bool  // the last read of a large payload was small (tcpBulkGap)
	epIn      uint32       // the poller's registered interest (epoll events; poller only)

	failed  atomic.Bool
	dead    atomic.Bool // a completion already reported the peer's loss
	stalled atomic.Bool // an incoming SEND waits for a posted receive
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

// enqueue adds a frame to send and tries to send at once.
func (l *tcpLink) enqueue(it *outItem) bool {
	// The stream carries happens-before edges the race detector cannot see: what
	// this goroutine wrote before the frame, the peer sees after it.
	raceRelease()
	l.txMu.Lock()
	if l.failed.Load() {
		l.txMu.Unlock()
		return false
	}
	l.out = append(l.out, it)
	l.txMu.Unlock()
	l.flushTx()
	return true
}

// flushTx writes queued frames until the socket is full; it reports whether
// frames are still waiting.
func (l *tcpLink) flushTx() bool {
	if !l.txMu.TryLock() {
		return true
	}
	defer l.txMu.Unlock()
	if l.conn == nil || l.failed.Load() {
		return false
	}
	for len(l.out) > 0 {
		l.iov = l.iov[:0]
		skip := l.outOff
		for _, it := range l.out {
			if len(l.iov) >= 60 {
				break
			}
			for i := -1; i < len(it.parts); i++ {
				b := it.hdr[:]
				if i >= 0 {
					b = it.parts[i]
				}
				if skip >= len(b) {
					skip -= len(b)
					continue
				}
				l.iov = append(l.iov, b[skip:])
				skip = 0
			}
		}
		n, err := writev(l.fd, l.iov)
		l.nWrites.Add(1)
		if err == syscall.EAGAIN {
			if !l.txWait.Swap(true) && l.viaPoller {
				l.q.ctx.wakePoller() // it waits for room in the socket
			}
			return true
		}
		if err != nil {
			go l.broken(err)
			return false
		}
		// Retire fully written frames.
		n += l.outOff
		l.outOff = 0
		k := 0
		for ; k < len(l.out); k++ {
			size := frameLen
			for _, p := range l.out[k].parts {
				size += len(p)
			}
			if n < size {
				l.outOff = n
				break
			}
			n -= size
			it := l.out[k]
			for _, h := range it.holds {
				release(h)
			}
			if it.pool && len(l.free) < 256 {
				clear(it.part[:])
				clear(it.hold[:])
				it.parts, it.holds, it.fence, it.read = nil, nil, false, false
				l.free = append(l.free, it)
			}
		}
		clear(l.out[:k])
		l.out = append(l.out[:0], l.out[k:]...)
	}
	if l.txWait.Load() {
		l.txWait.Store(false)
	}
	if l.ackDue.Load() != 0 {
		l.ackDue.Store(0)
		l.q.ctx.tcp.acks.Add(-1)
	}
	return false
}

// poll runs one round of the link for the context's progress, without
// blocking: it receives and serves what arrived, and sends what waits (where the
// poller serves the link, only frames that wait for room and answers whose
// delay ran out: the others ride with the next request). It returns the number
// of frames handled (or 1 while data waits to go).
func (l *tcpLink) poll() int {
	n := 0
	if !l.viaPoller {
		if l.flushTx() {
			n = 1
		}
		return n + l.pollRx()
	}
	l.q.ctx.tcp.polls.Add(1) // the poller's goroutine naps meanwhile
	var now int64
	if next := l.nextLook.Load(); next != 0 {
		if now = tcpClock(); now < next {
			return 0
		}
	}
	if l.txWait.Load() || l.ackOverdue() {
		if l.flushTx() {
			n = 1
		}
	}
	empty := l.nEmpty.Load()
	got := l.pollRx()
	gap := time.Duration(0)
	switch {
	case n != 0 || l.thin.Load():
		// Frames wait for room, or a large payload trickles in: let the
		// socket drain or fill before the next look.
		gap = tcpBulkGap
	case got == 0 && l.nEmpty.Load() != empty:
		gap = tcpPollGap // nothing came
	}
	if gap != 0 {
		if now == 0 {
			now = tcpClock()
		}
		l.nextLook.Store(now + int64(gap))
	} else if l.nextLook.Load() != 0 {
		l.nextLook.Store(0)
	}
	return n + got
}

// tcpBulkGap is how long poll rounds leave a link's socket alone while a large
// transfer is under way and the last look found the socket nearly empty (a read
// of a large payload got less than tcpBulkRead) or full (frames still wait for
// room): a look per round moved a few kilobytes per system call. The kernel
// moves about tcpBulkRead in the gap at loopback speed.
const (
	tcpBulkGap  = 16 * time.Microsecond
	tcpBulkRead = 64 << 10
)

// tcpPollGap is how long poll rounds leave a link's socket alone after one
// found it empty. An empty read costs a system call and the socket's lock, which
// the kernel's delivery of the next segment then waits for; a caller spinning
// on Poll made one every few hundred nanoseconds. The gap bounds the delay it
// adds to a message's arrival.
var tcpPollGap = 2 * time.Microsecond

// ackOverdue reports whether an answer waits for a frame to ride with longer
// than tcpAnswerDelay.
func (l *tcpLink) ackOverdue() bool {
	due := l.ackDue.Load()
	return due != 0 && due <= tcpClock()
}

// pollRx receives and serves frames until the socket is drained, or an incoming
// SEND waits for a receive. It returns the number of frames served.
func (l *tcpLink) pollRx() int {
	if !l.rxMu.TryLock() {
		return 0
	}
	defer l.rxMu.Unlock()
	if l.failed.Load() {
		return 0
	}
	n := 0
	for {
		got, drained, err := l.receive()
		n += got
		if err != nil {
			l.lost(err)
			return n
		}
		if drained || l.rx.waitRecv || l.failed.Load() {
			// A destroy (shut) waits on rxMu: a peer that keeps the socket
			// full must not hold it off.
			return n
		}
	}
}

// lost fails the link after a socket error (rxMu held).
func (l *tcpLink) lost(err error) {
	if l.viaPoller {
		l.q.ctx.unwatch(l) // the socket stays readable (EOF) until it closes
	}
	// broken takes the queue pair's lock, and shut rxMu: not from here.
	go l.broken(err)
}

// receive reads what the socket holds and serves the complete frames (rxMu
// held). drained says the last read found the socket empty (or took less than
// it asked for: the socket held no more at that time).
func (l *tcpLink) receive() (frames int, drained bool, err error) {
	rx := &l.rx
	if rx.waitRecv {
		if err := l.beginSend(); err != nil || rx.waitRecv {
			return 0, false, err
		}
		if rx.left == 0 {
			return 1, false, l.endFrame()
		}
	}
	// A large payload goes straight to its destination, as much of it as the
	// socket holds: a read that fills its part reads on.
	for rx.body && l.rbR == l.rbW && rx.left >= directRead && rx.di < len(rx.dst) && rx.dst[rx.di] != nil {
		d := rx.dst[rx.di][rx.doff:]
		if uint32(len(d)) > rx.left {
			d = d[:rx.left]
		}
		m, err := l.read(d)
		if err == syscall.EAGAIN {
			return 0, true, nil
		}
		if err != nil {
			return 0, false, err
		}
		if m == 0 {
			return 0, false, errors.New("connection closed by peer")
		}
		l.advance(m)
		if rx.left == 0 {
			l.setThin(false)
			return 1, m < len(d), l.endFrame()
		}
		if m < len(d) {
			// The socket is drained; a small read of a large payload: the
			// next poll rounds wait a little (tcpBulkGap).
			l.setThin(m < tcpBulkRead && rx.left >= tcpBulkRead)
			return 0, true, nil
		}
	}
	if l.rbR == l.rbW {
		l.rbR, l.rbW = 0, 0
		m, err := l.read(l.rb)
		if err == syscall.EAGAIN {
			return 0, true, nil
		}
		if err != nil {
			return 0, false, err
		}
		if m == 0 {
			return 0, false, errors.New("connection closed by peer")
		}
		l.rbW = m
		drained = m < len(l.rb)
	}
	for l.rbR < l.rbW {
		if !rx.body {
			c := copy(rx.hdr[rx.have:], l.rb[l.rbR:l.rbW])
			rx.have += c
			l.rbR += c
			if rx.have < frameLen {
				break
			}
			raceAcquire()
			if raceEnabled {
				// The race detector learns of a vectored write's reads of the
				// send buffers only once the call has returned: the peer's
				// answer can arrive first, and a completion it reports would
				// race the write it answers. The write is made under txMu:
				// waiting for txMu orders its reads before what follows.
				l.txMu.Lock()
				//lint:ignore SA2001 an empty critical section is the barrier
				l.txMu.Unlock()
			}
			rx.have = 0
			rx.f.get(rx.hdr[:])
			if err := l.beginFrame(); err != nil {
				return frames, false, err
			}
			if rx.waitRecv {
				return frames, false, nil
			}
			if rx.left == 0 {
				frames++
				if err := l.endFrame(); err != nil {
					return frames, false, err
				}
			}
			continue
		}
		m := min(int(rx.left), l.rbW-l.rbR)
		src := l.rb[l.rbR : l.rbR+m]
		for len(src) > 0 {
			if rx.di >= len(rx.dst) || rx.dst[rx.di] == nil {
				l.advance(len(src))
				src = nil
				break
			}
			c := copy(rx.dst[rx.di][rx.doff:], src)
			src = src[c:]
			l.advance(c)
		}
		l.rbR += m
		if rx.left == 0 {
			frames++
			if err := l.endFrame(); err != nil {
				return frames, false, err
			}
		}
	}
	return frames, drained, nil
}

// read reads from the socket (non-blocking) and counts the call.
func (l *tcpLink) read(b []byte) (int, error) {
	m, err := syscall.Read(l.fd, b)
	l.nReads.Add(1)
	if err == syscall.EAGAIN {
		l.nEmpty.Add(1)
	}
	return m, err
}

// setThin records whether the last read of a large payload was small.
func (l *tcpLink) setThin(v bool) {
	if l.thin.Load() != v {
		l.thin.Store(v)
	}
}

// advance records n payload bytes placed (or discarded).
func (l *tcpLink) advance(n int) {
	rx := &l.rx
	rx.left -= uint32(n)
	for n > 0 && rx.di < len(rx.dst) {
		d := rx.dst[rx.di]
		if d == nil {
			rx.doff += n
			n = 0
			break
		}
		c := min(n, len(d)-rx.doff)
		rx.doff += c
		n -= c
		if rx.doff == len(d) {
			rx.di++
			rx.doff = 0
		}
	}
}

// beginFrame decides where the payload of the frame just read goes.
func (l *tcpLink) beginFrame() error {
	rx := &l.rx
	f := &rx.f
	if f.n > maxFrame {
		return fmt.Errorf("frame of %d bytes", f.n)
	}
	rx.body, rx.left, rx.dst, rx.di, rx.doff, rx.holds, rx.act = f.n > 0, 0, rx.dst[:0], 0, 0, rx.holds[:0], actNone
	rx.tok = f.token
	q := l.q
	c := q.ctx
	discardAll := func() {
		rx.left = f.n
		rx.dst = append(rx.dst, nil)
	}
	switch f.kind {
	case frWrite:
		if f.n > 0 || f.flags&ffImm != 0 {
			b, h, ok := c.local(f.rkey, f.raddr, uint64(f.n), verbs.AccessRemoteWrite, q.pd.id)
			if !ok {
				discardAll()
				rx.act, rx.st = actNak, verbs.StatusRemoteAccessError
				break
			}
			rx.left = f.n
			rx.dst = append(rx.dst, b)
			rx.holds = append(rx.holds, h)
		}
		rx.act = actWrite
	case frSend:
		return l.beginSend()
	case frRead:
		b, h, ok := c.local(f.rkey, f.raddr, uint64(f.n), verbs.AccessRemoteRead, q.pd.id)
		rx.body = false
		if !ok {
			l.answer(frNak, f.token, verbs.StatusRemoteAccessError, 0)
			break
		}
		it := l.item()
		it.part[0], it.hold[0] = b, h
		it.parts, it.holds = it.part[:1], it.hold[:1]
		rf := frame{kind: frReadRsp, token: f.token, n: f.n}
		rf.put(it.hdr[:])
		if !l.enqueue(it) {
			release(h)
		}
	case frFetchAdd, frCmpSwap:
		rx.body = false
		if f.raddr%8 != 0 {
			l.answer(frNak, f.token, verbs.StatusRemoteInvalidRequest, 0)
			break
		}
		b, h, ok := c.local(f.rkey, f.raddr, 8, verbs.AccessRemoteAtomic, q.pd.id)
		if !ok {
			l.answer(frNak, f.token, verbs.StatusRemoteAccessError, 0)
			break
		}
		p := (*uint64)(unsafe.Pointer(unsafe.SliceData(b)))
		var old uint64
		if f.kind == frFetchAdd {
			old = atomic.AddUint64(p, f.a) - f.a
		} else {
			for {
				old = atomic.LoadUint64(p)
				if old != f.a || atomic.CompareAndSwapUint64(p, old, f.b) {
					break
				}
			}
		}
		release(h)
		l.answer(frAtomRsp, f.token, verbs.StatusSuccess, old)
	case frAck:
		rx.body = false
		l.complete(f.token, verbs.StatusSuccess, 0)
	case frNak:
		rx.body = false
		st := verbs.Status(f.status)
		if st == verbs.StatusSuccess {
			st = verbs.StatusRemoteOperationError
		}
		if st == verbs.StatusLocalLengthError {
			st = verbs.StatusRemoteInvalidRequest
		}
		l.complete(f.token, st, 0)
	case frReadRsp:
		l.pmu.Lock()
		p := l.pending[f.token]
		l.pmu.Unlock()
		if p == nil {
			return fmt.Errorf("READ response for unknown request %d", f.token)
		}
		rx.left = f.n
		rx.dst = append(rx.dst, p.local...)
		rx.act = actReadRsp
	case frAtomRsp:
		rx.body = false
		l.pmu.Lock()
		p := l.pending[f.token]
		l.pmu.Unlock()
		if p == nil {
			return fmt.Errorf("atomic response for unknown request %d", f.token)
		}
		var v [8]byte
		binary.LittleEndian.PutUint64(v[:], f.a)
		rest := v[:]
		for _, b := range p.local {
			rest = rest[copy(b, rest):]
		}
		l.complete(f.token, verbs.StatusSuccess, 8)
	default:
		return fmt.Errorf("unknown frame kind %d", f.kind)
	}
	if rx.left == 0 {
		rx.body = false
	}
	return nil
}

// endFrame runs what follows a frame's payload.
func (l *tcpLink) endFrame() error {
	rx := &l.rx
	for _, h := range rx.holds {
		release(h)
	}
	rx.holds = rx.holds[:0]
	rx.body = false
	act := rx.act
	rx.act = actNone
	f := &rx.f
	switch act {
	case actNak:
		l.answer(frNak, rx.tok, rx.st, 0)
	// The answer is queued before the completion is pushed: a reply the
	// application posts on seeing the completion then carries it.
	case actWrite:
		if f.flags&ffImm == 0 {
			l.answer(frAck, rx.tok, verbs.StatusSuccess, 0)
			break
		}
		wc, ok := l.consumeImm(f.imm, f.n)
		if !ok {
			l.answer(frNak, rx.tok, verbs.StatusRNRRetryExceeded, 0)
			break
		}
		l.answer(frAck, rx.tok, verbs.StatusSuccess, 0)
		l.q.rcq.push(wc)
	case actSend:
		q := l.q
		wc := verbs.WorkCompletion{ID: rx.recvID, Status: rx.st, Opcode: verbs.WCRecv, ByteLen: f.n, QPNum: q.num}
		if f.flags&ffImm != 0 {
			wc.Flags, wc.Imm = verbs.WCWithImm, f.imm
		}
		if rx.st != verbs.StatusSuccess {
			l.answer(frNak, rx.tok, verbs.StatusRemoteOperationError, 0)
		} else {
			l.answer(frAck, rx.tok, verbs.StatusSuccess, 0)
		}
		q.rcq.push(wc)
	case actReadRsp:
		l.complete(rx.tok, verbs.StatusSuccess, f.n)
	}
	return nil
}

// beginSend places an incoming SEND into the next posted receive. With none
// posted, the frame waits (progress retries it) up to rnrWait, then the sender's
// request fails with StatusRNRRetryExceeded.
func (l *tcpLink) beginSend() error {
	rx := &l.rx
	f := &rx.f
	q := l.q
	q.mu.Lock()
	if q.rqHead == q.rqTail {
		q.mu.Unlock()
		if !rx.waitRecv {
			rx.waitRecv, rx.waitSince = true, time.Now()
			l.stalled.Store(true)
			return nil
		}
		if time.Since(rx.waitSince) < rnrWait {
			return nil
		}
		// No receive for too long: discard and refuse.
		rx.waitRecv = false
		l.stalled.Store(false)
		rx.body = f.n > 0
		rx.left = f.n
		rx.dst = append(rx.dst, nil)
		rx.act, rx.st = actNak, verbs.StatusRNRRetryExceeded
		if rx.left == 0 {
			rx.body = false
		}
		return nil
	}
	if rx.waitRecv {
		rx.waitRecv = false
		l.stalled.Store(false)
		rx.body = f.n > 0
	}
	e := &q.rq[q.rqHead%uint64(len(q.rq))]
	q.rqHead++
	id := e.id
	if uint64(f.n) > e.total {
		q.rcq.push(verbs.WorkCompletion{ID: id, Status: verbs.StatusLocalLengthError, Opcode: verbs.WCRecv, QPNum: q.num})
		q.mu.Unlock()
		rx.left = f.n
		rx.dst = append(rx.dst, nil)
		rx.act, rx.st = actNak, verbs.StatusLocalLengthError
		if rx.left == 0 {
			rx.body = false
		}
		return nil
	}
	sg := e.sg
	st := verbs.StatusSuccess
	left := uint64(f.n)
	for _, s := range sg {
		if left == 0 {
			break
		}
		n := min(uint64(s.Length), left)
		b, h, ok := q.ctx.local(s.LKey, s.Addr, n, verbs.AccessLocalWrite, q.pd.id)
		if !ok {
			st = verbs.StatusLocalProtectionError
			break
		}
		if n > 0 { // an empty element holds no bytes (nil would discard)
			rx.dst = append(rx.dst, b)
		}
		rx.holds = append(rx.holds, h)
		left -= n
	}
	q.mu.Unlock()
	if st != verbs.StatusSuccess {
		for _, h := range rx.holds {
			release(h)
		}
		rx.holds = rx.holds[:0]
		rx.dst = append(rx.dst[:0], nil)
	}
	rx.left = f.n
	rx.act, rx.st, rx.recvID = actSend, st, id
	if rx.left == 0 {
		rx.body = false
	}
	return nil
}

// tcpAnswerDelay is how long the ACK of a SEND or WRITE waits for a frame to
// ride with (a variable for the tests).
var tcpAnswerDelay = 0 * time.Microsecond

// rnrWait is how long an incoming SEND waits for a posted receive.
const rnrWait = 5 * time.Second

// consumeImm consumes a posted receive for an RDMA WRITE with immediate and
// returns the completion to push (false: no receive is posted).
func (l *tcpLink) consumeImm(imm uint32, n uint32) (verbs.WorkCompletion, bool) {
	q := l.q
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.rqHead == q.rqTail {
		return verbs.WorkCompletion{}, false
	}
	e := &q.rq[q.rqHead%uint64(len(q.rq))]
	q.rqHead++
	return verbs.WorkCompletion{ID: e.id, Status: verbs.StatusSuccess, Opcode: verbs.WCRecvRDMAWithImm,
		ByteLen: n, QPNum: q.num, Flags: verbs.WCWithImm, Imm: imm}, true
}

// answer queues a response frame with no payload. An ACK is not written at once
// where the poller serves the link: it rides with the next frame the link sends
// (the reply the application posts to the SEND it answers), or goes alone after
// tcpAnswerDelay. Other answers (NAKs, atomics' old values) are written at once.
func (l *tcpLink) answer(kind uint8, tok uint64, st verbs.Status, old uint64) {
	it := l.item()
	f := frame{kind: kind, token: tok, status: uint8(st), a: old}
	f.put(it.hdr[:])
	if kind != frAck || !l.viaPoller {
		l.enqueue(it)
		return
	}
	raceRelease()
	l.txMu.Lock()
	if l.failed.Load() {
		l.txMu.Unlock()
		return
	}
	l.out = append(l.out, it)
	first := l.ackDue.Load() == 0
	if first {
		l.ackDue.Store(tcpClock() + int64(tcpAnswerDelay))
		l.q.ctx.tcp.acks.Add(1)
	}
	l.txMu.Unlock()
	if first {
		l.q.ctx.ackQueued()
	}
}

// tcpEpoch is the origin of tcpClock.
var tcpEpoch = time.Now()

// tcpClock returns monotonic nanoseconds since tcpEpoch.
func tcpClock() int64 { return int64(time.Since(tcpEpoch)) }

// item returns a reusable frame item (an answer, or a READ's data).
func (l *tcpLink) item() *outItem {
	l.txMu.Lock()
	var it *outItem
	if len(l.free) == 0 {
		// A burst (a window of requests, each answered) empties the list:
		// refill it with a slab, one allocation per tcpSlab items, not one each.
		slab := make([]outItem, tcpSlab)
		for i := range slab {
			slab[i].pool = true
			l.free = append(l.free, &slab[i])
		}
	}
	n := len(l.free)
	it = l.free[n-1]
	l.free = l.free[:n-1]
	l.txMu.Unlock()
	return it
}

// tcpSlab is how many frame items or pending records a link allocates at once
// when its free list runs dry.
const tcpSlab = 32

// broken fails the link: outstanding work completes with StatusRetryExceeded (the
// peer stopped answering) and the queue pair enters the error state.
func (l *tcpLink) broken(err error) {
	l.shut()
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
			l.conn.Close()
		}
		for _, it := range l.out {
			for _, h := range it.holds {
				release(h)
			}
		}
		l.out = nil
		if l.ackDue.Swap(0) != 0 {
			l.q.ctx.tcp.acks.Add(-1)
		}
		l.txMu.Unlock()
		for _, h := range l.rx.holds {
			release(h)
		}
		l.rx.holds = nil
		l.rxMu.Unlock()
		l.pmu.Lock()
		for _, it := range l.held {
			for _, h := range it.holds {
				release(h)
			}
		}
		l.held = nil
		l.pmu.Unlock()
		l.q.ctx.removeLink(l)
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
		for _, h := range p.holds {
			release(h)
		}
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
	l.wg.Wait()
	l.flush(verbs.StatusWorkRequestFlushed)
}

// postSend checks and queues send work requests (q.mu held).
func (l *tcpLink) postSend(wrs []verbs.SendWR) error {
	q := l.q
	for i := range wrs {
		wr := &wrs[i]
		if q.State() != verbs.QPReady || l.failed.Load() {
			// The first request after the peer vanished learns it (as a reliable
			// connection's retries would); later ones are flushed.
			st := verbs.StatusWorkRequestFlushed
			if l.failed.Load() && l.dead.CompareAndSwap(false, true) {
				st = verbs.StatusRetryExceeded
			}
			q.scq.push(verbs.WorkCompletion{ID: wr.ID, Status: st, Opcode: verbs.OpcodeOf(wr.Opcode), QPNum: q.num})
			continue
		}
		if len(wr.SG) > q.maxSGE || wr.Opcode > verbs.OpAtomicCmpSwap {
			return verbs.Errorf(postOp("post_send", i), verbs.ErrInvalidArgument, nil)
		}
		l.pmu.Lock()
		full := len(l.pending) >= len(q.sq)
		l.pmu.Unlock()
		if full {
			return errSendQueueFull
		}
		total := verbs.TotalLength(wr.SG)
		if total > maxFrame {
			return verbs.Errorf(postOp("post_send", i), verbs.ErrInvalidArgument, fmt.Errorf("%d bytes", total))
		}
		atomic := wr.Opcode == verbs.OpAtomicFetchAdd || wr.Opcode == verbs.OpAtomicCmpSwap
		if atomic && total != 8 {
			return verbs.Errorf(postOp("post_send", i), verbs.ErrInvalidArgument, fmt.Errorf("atomics move 8 bytes"))
		}
		if wr.Flags&verbs.SendInline != 0 && total > uint64(attr.MaxInline) {
			return verbs.Errorf(postOp("post_send", i), verbs.ErrInvalidArgument,
				fmt.Errorf("inline send of %d bytes above %d", total, attr.MaxInline))
		}
		// Resolve the local memory now: a bad SGE fails this request alone.
		need := verbs.Access(0)
		if wr.Opcode == verbs.OpRDMARead || atomic {
			need = verbs.AccessLocalWrite
		}
		// The request's frame, and its pending record: from the link's free
		// lists, with room for four parts and holds (no allocation per request
		// up to that).
		it := l.item()
		l.pmu.Lock()
		if len(l.pfree) == 0 {
			slab := make([]tcpPending, tcpSlab)
			for i := range slab {
				l.pfree = append(l.pfree, &slab[i])
			}
		}
		n := len(l.pfree)
		p := l.pfree[n-1]
		l.pfree = l.pfree[:n-1]
		l.pmu.Unlock()
		isRead := wr.Opcode == verbs.OpRDMARead || atomic
		parts, holds := it.part[:0], it.hold[:0]
		if isRead {
			parts, holds = p.part[:0], p.hold[:0]
		}
		ok := true
		if wr.Flags&verbs.SendInline != 0 && !isRead {
			buf := it.inl[:0]
			for _, s := range wr.SG {
				if s.Length > 0 {
					buf = append(buf, unsafe.Slice((*byte)(addrPtr(s.Addr)), s.Length)...)
				}
			}
			it.inl = buf
			parts = append(parts, buf)
		} else {
			for _, s := range wr.SG {
				b, h, good := q.ctx.local(s.LKey, s.Addr, uint64(s.Length), need, q.pd.id)
				if !good {
					ok = false
					break
				}
				holds = append(holds, h)
				if len(b) > 0 { // an empty element holds no bytes (nil would discard)
					parts = append(parts, b)
				}
			}
		}
		if !ok {
			for _, h := range holds {
				release(h)
			}
			q.state.Store(uint32(verbs.QPError))
			q.scq.push(verbs.WorkCompletion{ID: wr.ID, Status: verbs.StatusLocalProtectionError,
				Opcode: verbs.OpcodeOf(wr.Opcode), QPNum: q.num})
			l.dead.Store(true)
			// broken takes the queue pair's lock, which the caller holds.
			go l.broken(errors.New("local protection error"))
			return nil
		}
		l.pmu.Lock()
		l.next++
		tok := l.next
		p.wr, p.signal = *wr, wr.Flags&verbs.SendSignaled != 0
		p.wr.SG = nil
		l.pending[tok] = p
		l.order = append(l.order, tok)
		l.pmu.Unlock()
		f := frame{token: tok, raddr: wr.RemoteAddr, rkey: wr.RKey, n: uint32(total), imm: wr.Imm}
		switch wr.Opcode {
		case verbs.OpSend, verbs.OpSendWithImm:
			f.kind = frSend
			it.parts, it.holds = parts, holds
		case verbs.OpRDMAWrite, verbs.OpRDMAWriteWithImm:
			f.kind = frWrite
			it.parts, it.holds = parts, holds
		case verbs.OpRDMARead:
			f.kind = frRead
			p.local, p.holds = parts, holds
		case verbs.OpAtomicFetchAdd:
			f.kind, f.a = frFetchAdd, wr.CompareAdd
			p.local, p.holds = parts, holds
		case verbs.OpAtomicCmpSwap:
			f.kind, f.a, f.b = frCmpSwap, wr.CompareAdd, wr.Swap
			p.local, p.holds = parts, holds
		}
		if wr.Opcode == verbs.OpSendWithImm || wr.Opcode == verbs.OpRDMAWriteWithImm {
			f.flags |= ffImm
		}
		f.put(it.hdr[:])
		l.pmu.Lock()
		if isRead {
			l.reads++
		}
		// A fenced request waits for the READs and atomics before it.
		hold := len(l.held) > 0 || (wr.Flags&verbs.SendFence != 0 && l.reads-b2i(isRead) > 0)
		if hold {
			it.fence = wr.Flags&verbs.SendFence != 0
			it.read = isRead
			l.held = append(l.held, it)
			l.pmu.Unlock()
			continue
		}
		l.pmu.Unlock()
		if !l.enqueue(it) {
			for _, h := range it.holds {
				release(h)
			}
		}
	}
	return nil
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// unfence sends the frames a fence held once no READ or atomic before them is
// outstanding (pmu held).
func (l *tcpLink) unfence() []*outItem {
	var ready []*outItem
	i := 0
	for ; i < len(l.held); i++ {
		it := l.held[i]
		if it.fence && l.reads-countReads(l.held[i:]) > 0 {
			break
		}
		ready = append(ready, it)
	}
	l.held = append(l.held[:0], l.held[i:]...)
	return ready
}

// countReads counts the READs and atomics among frames not yet sent.
func countReads(its []*outItem) int {
	n := 0
	for _, it := range its {
		if it.read {
			n++
		}
	}
	return n
}

// complete finishes the request tok with st.
func (l *tcpLink) complete(tok uint64, st verbs.Status, byteLen uint32) bool {
	l.pmu.Lock()
	p := l.pending[tok]
	if p == nil {
		l.pmu.Unlock()
		return false
	}
	delete(l.pending, tok)
	var ready []*outItem
	if op := p.wr.Opcode; op == verbs.OpRDMARead || op == verbs.OpAtomicFetchAdd || op == verbs.OpAtomicCmpSwap {
		l.reads--
		if len(l.held) > 0 {
			ready = l.unfence()
		}
	}
	if len(l.order) > 0 && l.order[0] == tok {
		// Shift rather than reslice: the array keeps its room (no allocation
		// per request).
		l.order = l.order[:copy(l.order, l.order[1:])]
	} else {
		for i, t := range l.order {
			if t == tok {
				l.order = append(l.order[:i], l.order[i+1:]...)
				break
			}
		}
	}
	l.pmu.Unlock()
	for _, h := range p.holds {
		release(h)
	}
	if st != verbs.StatusSuccess {
		l.q.mu.Lock()
		if l.q.State() == verbs.QPReady {
			l.q.state.Store(uint32(verbs.QPError))
		}
		l.q.mu.Unlock()
	}
	if p.signal || st != verbs.StatusSuccess {
		l.q.scq.push(verbs.WorkCompletion{ID: p.wr.ID, Status: st, Opcode: verbs.OpcodeOf(p.wr.Opcode),
			ByteLen: byteLen, QPNum: l.q.num})
	}
	// The record goes back to the free list (its parts no longer needed: a
	// READ's data and an atomic's value have landed).
	clear(p.part[:])
	clear(p.hold[:])
	p.local, p.holds, p.wr = nil, nil, verbs.SendWR{}
	l.pmu.Lock()
	if len(l.pfree) < 256 {
		l.pfree = append(l.pfree, p)
	}
	l.pmu.Unlock()
	if st != verbs.StatusSuccess {
		l.dead.Store(true) // the error completion told the loss; later requests flush
		go l.broken(fmt.Errorf("peer answered %v", st))
		return true
	}
	for _, it := range ready {
		if !l.enqueue(it) {
			for _, h := range it.holds {
				release(h)
			}
		}
	}
	return true
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
