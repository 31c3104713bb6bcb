package nic

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/goportals/goportals/internal/verbs"
)

const (
	recvDepth = 64 // receives posted per peer
	// repostBatch is how many handled receive slots are posted again in one
	// PostRecv: a call per message would take the queue pair's lock per message.
	// At least recvDepth-repostBatch+1 receives stay posted.
	repostBatch = 16
	sendDepth   = 256 // send queue per peer
	signalN     = 32  // at least every n-th request posted on a queue pair is signaled so the provider can free slots
)

// Work request ids: the top byte says what completed.
const (
	widRecv   = 1 << 56
	widSend   = 2 << 56
	widTarget = 3 << 56 // an RDMA READ or WRITE of a target operation
	widMask   = 0xff << 56
)

// peer is one connection to another NI: a queue pair, its posted receive slots,
// and the state for posting sends.
type peer struct {
	ni        *NI
	idx       int       // index in the NI's peer list, carried in work request ids (-1: a dead peer never listed)
	id        ProcessID // the physical id of the NI at the other end
	broken    atomic.Bool
	why       error  // why a dead peer never opened
	rank      Rank   // the peer's rank in the logical map, as of rankGen (under ni.mu)
	rankGen   uint32 // the map generation rank was computed for (0: never)
	closeOnce sync.Once
	qp        verbs.QP
	recv      []byte
	recvMR    verbs.MR

	msend verbs.MessageSender // the provider's message sends (nil: work requests only)

	sendMu  sync.Mutex
	scratch []byte // the message being sent: header, then payload (msgMax bytes)
	sges    []verbs.SGE
	wr      [1]verbs.SendWR
	unsig   int // requests posted since the last signaled one (signal)
	failed  bool
	queue   []queued                  // engine sends waiting for room (under ni.progMu)
	rwr     [repostBatch]verbs.RecvWR // handled slots not yet posted again (the first nre)
	rsge    [repostBatch]verbs.SGE
	nre     int
}

// newPeer creates the queue pair of a connection to id (not yet connected) and
// lists it, so progress handles its completions from the start (its receives
// carry its index).
func (ni *NI) newPeer(id ProcessID) (*peer, error) {
	qp, err := ni.pd.CreateQP(verbs.QPAttr{SendCQ: ni.cq, RecvCQ: ni.cq, MaxSendWR: sendDepth, MaxRecvWR: recvDepth, MaxSGE: 16})
	if err != nil {
		return nil, err
	}
	pr := &peer{ni: ni, id: ProcessID{NID: id.NID, PID: id.PID}, qp: qp, recv: make([]byte, recvDepth*msgMax), scratch: make([]byte, msgMax),
		sges: make([]verbs.SGE, 0, 4)}
	if pr.recvMR, err = ni.pd.RegMR(pr.recv, verbs.AccessLocalWrite); err != nil {
		qp.Close()
		return nil, err
	}
	ni.mu.Lock()
	old := ni.peerList()
	if len(old) > 0xffff {
		ni.mu.Unlock()
		pr.close() // outside the engine lock: closing waits for the provider's progress
		return nil, fmt.Errorf("%w: more than 65536 connections on one NI", verbs.ErrNoResources)
	}
	pr.idx = len(old)
	l := make([]*peer, len(old), len(old)+1)
	copy(l, old)
	l = append(l, pr)
	ni.plist.Store(&l)
	ni.mu.Unlock()
	pr.enableMessages()
	return pr, nil
}

// enableMessages puts the connection in the provider's message mode when it has
// one (verbs.MessageQP): the peer's messages are then handed to the engine from
// where the provider received them (onMessage), and ours go out without work
// requests. Before Connect. The posted receives stay: anything the provider does
// not hand out as a message still takes them.
func (pr *peer) enableMessages() {
	if pr.ni.mcq == nil {
		return
	}
	if mq, ok := pr.qp.(verbs.MessageQP); ok && mq.EnableMessages(uint64(pr.idx), msgMax) != nil {
		return // this queue pair cannot: posted receives, as without the mode
	}
	pr.msend, _ = pr.qp.(verbs.MessageSender)
}

func (pr *peer) postRecvs() error {
	for i := 0; i < recvDepth; i++ {
		if err := pr.repost(i); err != nil {
			return err
		}
	}
	return pr.flushReposts()
}

// repost gives receive slot back to the queue pair: it is posted again with the
// next repostBatch-1 handled slots, in one PostRecv. Called under progMu (or at
// setup), so the work request storage can be reused.
func (pr *peer) repost(slot int) error {
	i := pr.nre
	pr.rsge[i] = verbs.SGE{Addr: pr.recvMR.Addr() + uint64(slot*msgMax), Length: msgMax, LKey: pr.recvMR.LKey()}
	pr.rwr[i] = verbs.RecvWR{ID: widRecv | uint64(pr.idx)<<16 | uint64(slot), SG: pr.rsge[i : i+1]}
	if pr.nre++; pr.nre < repostBatch {
		return nil
	}
	return pr.flushReposts()
}

// flushReposts posts the slots repost collected.
func (pr *peer) flushReposts() error {
	n := pr.nre
	pr.nre = 0
	if n == 0 {
		return nil
	}
	return pr.qp.PostRecv(pr.rwr[:n])
}

func (pr *peer) slot(i int) []byte { return pr.recv[i*msgMax : (i+1)*msgMax] }

// close closes the connection's queue pair (its receives complete flushed, which
// progress ignores for a broken peer).
func (pr *peer) close() {
	pr.broken.Store(true)
	pr.closeOnce.Do(func() {
		if pr.qp != nil {
			pr.qp.Close()
		}
		if pr.recvMR != nil {
			pr.recvMR.Dereg()
		}
	})
}

func addrOf(b []byte) uint64 { return uint64(uintptr(unsafe.Pointer(unsafe.SliceData(b)))) }

var errPeerFailed = errors.New("portals: connection to the peer failed")

// errSQFull: the send queue has no room now.
var errSQFull = errors.New("portals: send queue full")

// trySend posts one message once: the header and up to three payload pieces,
// copied by the provider at post time (inline), so the caller may reuse them at
// once. It returns errSQFull when the send queue has no room.
func (pr *peer) trySend(h *header, parts ...[]byte) error {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	h.payload = uint32(n)
	pr.sendMu.Lock()
	defer pr.sendMu.Unlock()
	if pr.failed {
		return errPeerFailed
	}
	hn := h.encode(pr.scratch)
	var sg []verbs.SGE
	if pr.msend != nil && hn+n <= len(pr.scratch) {
		// One contiguous message, sent without a work request when the provider
		// can at once; else posted as one (in order behind what is queued).
		m := hn
		for _, p := range parts {
			m += copy(pr.scratch[m:], p)
		}
		err := pr.msend.SendMessage(pr.scratch[:m])
		if err == nil {
			return nil
		}
		if err != verbs.ErrNoResources && !errors.Is(err, verbs.ErrNoResources) {
			return err
		}
		sg = append(pr.sges[:0], verbs.SGE{Addr: addrOf(pr.scratch), Length: uint32(m)})
	} else {
		sg = append(pr.sges[:0], verbs.SGE{Addr: addrOf(pr.scratch), Length: uint32(hn)})
		for _, p := range parts {
			if len(p) > 0 {
				sg = append(sg, verbs.SGE{Addr: addrOf(p), Length: uint32(len(p))})
			}
		}
	}
	pr.wr[0] = verbs.SendWR{ID: widSend | uint64(pr.idx), Opcode: verbs.OpSend, Flags: verbs.SendInline, SG: sg}
	return pr.postLocked()
}

// postLocked posts pr.wr[0] (pr.sendMu held), signaled if it asks to be or if
// signalN-1 requests went unsignaled before it on this queue pair, whatever they
// were (sends, pushed puts' writes): a provider that frees send queue entries
// only at a completion (an HCA) then always gets them back before the queue
// fills (sendDepth > signalN).
func (pr *peer) postLocked() error {
	sig := pr.wr[0].Flags&verbs.SendSignaled != 0 || pr.unsig >= signalN-1
	if sig {
		pr.wr[0].Flags |= verbs.SendSignaled
	}
	err := pr.qp.PostSend(pr.wr[:])
	pr.wr[0].SG = nil
	if err == nil {
		if sig {
			pr.unsig = 0
		} else {
			pr.unsig++
		}
		return nil
	}
	if errors.Is(err, verbs.ErrNoResources) {
		return errSQFull
	}
	return err
}

// tryPost posts an RDMA work request of a target operation once.
func (pr *peer) tryPost(wr verbs.SendWR) error {
	pr.sendMu.Lock()
	defer pr.sendMu.Unlock()
	if pr.failed {
		return errPeerFailed
	}
	pr.wr[0] = wr
	return pr.postLocked()
}

// send posts a message for a caller outside the engine (an API call): while the
// send queue is full it helps the engine's progress, which frees it.
func (pr *peer) send(h *header, parts ...[]byte) error {
	for {
		err := pr.trySend(h, parts...)
		if err != errSQFull {
			return err
		}
		pr.ni.assist()
	}
}

// queued is a message or RDMA request the engine could not post yet.
type queued struct {
	rdma bool
	wr   verbs.SendWR
	h    header
	data []byte
}

// sendOrQueue posts an engine message (an answer), or queues it behind earlier
// ones when the send queue is full: the engine never blocks on a peer, or two
// peers answering each other could wait on each other forever. Called under
// ni.progMu.
func (pr *peer) sendOrQueue(h *header, parts ...[]byte) error {
	if len(pr.queue) == 0 {
		if err := pr.trySend(h, parts...); err != errSQFull {
			return err
		}
	}
	q := queued{h: *h}
	for _, p := range parts {
		q.data = append(q.data, p...)
	}
	pr.queue = append(pr.queue, q)
	pr.ni.queued.Add(1)
	return nil
}

// postOrQueue is sendOrQueue for an RDMA request of a target operation.
func (pr *peer) postOrQueue(wr verbs.SendWR) error {
	if len(pr.queue) == 0 {
		if err := pr.tryPost(wr); err != errSQFull {
			return err
		}
	}
	wr.SG = append([]verbs.SGE(nil), wr.SG...)
	pr.queue = append(pr.queue, queued{rdma: true, wr: wr})
	pr.ni.queued.Add(1)
	return nil
}

// flushQueue posts what fits of the queue, in order. Called under ni.progMu.
func (pr *peer) flushQueue() int {
	n := 0
	for len(pr.queue) > 0 {
		q := &pr.queue[0]
		var err error
		if q.rdma {
			err = pr.tryPost(q.wr)
		} else {
			err = pr.trySend(&q.h, q.data)
		}
		if err == errSQFull {
			break
		}
		if err != nil && q.rdma && q.wr.ID&widMask == widTarget {
			// The peer is gone: the target operation fails. (A pushed put's
			// write, widSend, fails with the peer: peerFailed.)
			pr.ni.targetDone(q.wr.ID&^widMask, false)
		} else if err != nil && q.rdma && err != errPeerFailed {
			pr.pushWriteRejected() // a pushed put's write (push.go)
		}
		pr.queue[0] = queued{}
		pr.queue = pr.queue[1:]
		pr.ni.queued.Add(-1)
		n++
	}
	return n
}
