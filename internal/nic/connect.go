package nic

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/goportals/goportals/internal/verbs"
)

// Connections. An NI is reachable by its physical id alone: nothing is exchanged
// when it is created, and the connection to a peer opens on the first operation
// that needs it. The initiator creates a queue pair for the peer and sends a
// connection request (its physical id, the NI's options slot and the queue pair's
// address) to the process that holds the target's pid on this node; that process
// hands the request to its NI of the same slot, which creates its own queue pair,
// connects it to the initiator's and answers with its address; the initiator
// connects in turn. Two NIs that connect to each other at the same time end up with
// two connections: each sends on the one it holds in its table (the first it
// recorded) and answers requests on the one they came in on, so both work.
//
// The request reaches the target process through the node-local rendezvous of its
// pid: in this OS process a table of the live processes; on Linux, for other OS
// processes, the abstract unix socket that claims the pid (see claimPID), which the
// target's progress polls and a goroutine waits on.

// physKey is the map key of a physical id.
type physKey struct {
	nid NID
	pid PID
}

func keyOf(id ProcessID) physKey { return physKey{id.NID, id.PID} }

// connectRequest is what an initiator sends to connect to an NI.
type connectRequest struct {
	slot   uint16
	from   ProcessID // the initiator's physical id
	addr   verbs.Address
	direct directHello // the initiator's direct table (a trailer; zero: none)
}

// Connection answers.
const (
	connOK     = 0
	connNoNI   = 1 // the target process has no NI of that slot
	connFailed = 2 // the target could not set up its queue pair
	connBad    = 3 // malformed request
)

// connectReply is the target's answer.
type connectReply struct {
	status uint32
	addr   verbs.Address
	direct directHello // the target's direct table (a trailer; zero: none)
}

const rvMagic = 0x56525047 // "GPRV"

func (r *connectRequest) encode() []byte {
	b := make([]byte, 20+len(r.addr)+helloSize)
	le.PutUint32(b[0:], rvMagic)
	le.PutUint16(b[4:], 1) // version
	le.PutUint16(b[6:], r.slot)
	le.PutUint32(b[8:], uint32(r.from.NID))
	le.PutUint32(b[12:], uint32(r.from.PID))
	le.PutUint32(b[16:], uint32(len(r.addr)))
	copy(b[20:], r.addr)
	r.direct.put(b[20+len(r.addr):])
	return b
}

func decodeRequest(b []byte) (connectRequest, bool) {
	if len(b) < 20 || le.Uint32(b) != rvMagic || le.Uint16(b[4:]) != 1 {
		return connectRequest{}, false
	}
	n := le.Uint32(b[16:])
	if (uint64(n) != uint64(len(b)-20) && uint64(n)+helloSize != uint64(len(b)-20)) || n > 4096 {
		return connectRequest{}, false
	}
	r := connectRequest{slot: le.Uint16(b[6:]),
		from: ProcessID{NID: NID(le.Uint32(b[8:])), PID: PID(le.Uint32(b[12:]))},
		addr: append(verbs.Address(nil), b[20:20+n]...)}
	if uint64(len(b)-20) > uint64(n) {
		r.direct = getHello(b[20+n:])
	}
	return r, true
}

func (r *connectReply) encode() []byte {
	b := make([]byte, 12+len(r.addr)+helloSize)
	le.PutUint32(b[0:], rvMagic)
	le.PutUint32(b[4:], r.status)
	le.PutUint32(b[8:], uint32(len(r.addr)))
	copy(b[12:], r.addr)
	r.direct.put(b[12+len(r.addr):])
	return b
}

func decodeReply(b []byte) (connectReply, bool) {
	if len(b) < 12 || le.Uint32(b) != rvMagic {
		return connectReply{}, false
	}
	n := uint64(le.Uint32(b[8:]))
	if n != uint64(len(b)-12) && n+helloSize != uint64(len(b)-12) {
		return connectReply{}, false
	}
	r := connectReply{status: le.Uint32(b[4:]), addr: append(verbs.Address(nil), b[12:12+n]...)}
	if uint64(len(b)-12) > n {
		r.direct = getHello(b[12+n:])
	}
	return r, true
}

// errUnreachable: the target cannot be reached (another node, no process with that
// pid, no NI of that kind in it). Operations to it complete with NI_UNDELIVERABLE.
var errUnreachable = errors.New("portals: target unreachable")

// connectTimeout bounds the wait for a target's answer to a connection request.
const connectTimeout = 30 * time.Second

// localProcs holds the live processes of this OS process by pid (under
// pidTable.mu): a request to one of them is handed over directly.
var localProcs = map[PID]*Process{}

// peerList returns the NI's connections, indexed as their work request ids say.
func (ni *NI) peerList() []*peer {
	if l := ni.plist.Load(); l != nil {
		return *l
	}
	return nil
}

// addPeer records a connected peer in the table by physical id, unless that id has
// a working connection already. It returns the connection to send on. Called with
// ni.mu held.
func (ni *NI) addPeer(pr *peer) *peer {
	k := keyOf(pr.id)
	if cur := ni.byPhys[k]; cur != nil && !cur.broken.Load() {
		return cur
	}
	ni.byPhys[k] = pr
	ni.lastKey, ni.lastPeer = k, pr
	ni.lastFast.Store(pr)
	return pr
}

// lookupPeer returns the working connection to a physical id, or nil. Called with
// ni.mu held.
func (ni *NI) lookupPeer(id ProcessID) *peer {
	k := keyOf(id)
	if pr := ni.lastPeer; pr != nil && ni.lastKey == k && !pr.broken.Load() {
		return pr
	}
	pr := ni.byPhys[k]
	if pr == nil || pr.broken.Load() {
		return nil
	}
	ni.lastKey, ni.lastPeer = k, pr
	ni.lastFast.Store(pr)
	return pr
}

// deadPeer is a connection that never opened: sending on it fails, so the
// operations issued on it complete with NI_UNDELIVERABLE.
func (ni *NI) deadPeer(id ProcessID, why error) *peer {
	pr := &peer{ni: ni, idx: -1, id: id, failed: true, why: why}
	pr.broken.Store(true)
	return pr
}

// connectTo opens the connection to the NI of this NI's kind at physical id id and
// returns it; when that fails it returns a dead peer. Called without ni.mu.
func (ni *NI) connectTo(id ProcessID) *peer {
	id = ProcessID{NID: id.NID, PID: id.PID}
	remote := id.NID != ni.self.NID
	if id.PID >= PIDAny {
		return ni.deadPeer(id, fmt.Errorf("%w: pid %d", errUnreachable, id.PID))
	}
	// Reach the target's process first: an unreachable pid costs no queue pair.
	ctx, cancel := context.WithTimeout(context.Background(), connectTimeout)
	defer cancel()
	var local *Process
	if !remote {
		pidTable.mu.Lock()
		local = localProcs[id.PID]
		pidTable.mu.Unlock()
	}
	var nc *nodeConn
	if local == nil && !remote {
		var err error
		if nc, err = ni.dialNode(ctx, id.PID); err != nil {
			return ni.deadPeer(id, err)
		}
		defer nc.close()
	}
	pr, err := ni.newPeer(id)
	if err != nil {
		return ni.deadPeer(id, err)
	}
	if err := pr.postRecvs(); err != nil {
		pr.close()
		return ni.deadPeer(id, err)
	}
	req := connectRequest{slot: uint16(ni.slot), from: ni.physID(), addr: pr.qp.Address(), direct: ni.directHello()}
	var rep connectReply
	switch {
	case local != nil:
		rep = local.serve(&req)
	case remote:
		rep, err = ni.exchangeRemote(ctx, id, &req)
	default:
		rep, err = nc.exchange(ctx, ni, id.PID, &req)
	}
	if err == nil && rep.status != connOK {
		err = fmt.Errorf("%w: pid %d answered %d", errUnreachable, id.PID, rep.status)
	}
	if err == nil {
		err = pr.qp.Connect(rep.addr)
	}
	if err != nil {
		pr.close()
		return ni.deadPeer(id, err)
	}
	ni.directLearn(id, rep.direct)
	ni.mu.Lock()
	if ni.dead.Load() {
		ni.mu.Unlock()
		pr.close() // outside the engine lock: closing waits for the provider's progress
		return ni.deadPeer(id, errPeerFailed)
	}
	defer ni.mu.Unlock()
	return ni.addPeer(pr)
}

// serve answers a connection request addressed to p.
func (p *Process) serve(req *connectRequest) connectReply {
	if req.slot >= uint16(len(p.nis)) {
		return connectReply{status: connBad}
	}
	p.mu.Lock()
	ni := p.nis[req.slot]
	p.mu.Unlock()
	if ni == nil || ni.dead.Load() {
		return connectReply{status: connNoNI}
	}
	addr, err := ni.accept(req)
	if err != nil {
		return connectReply{status: connFailed}
	}
	ni.directLearn(req.from, req.direct)
	return connectReply{status: connOK, addr: addr, direct: ni.directHello()}
}

// accept sets up the target side of a connection: a queue pair connected to the
// initiator's, recorded under the initiator's physical id.
func (ni *NI) accept(req *connectRequest) (verbs.Address, error) {
	pr, err := ni.newPeer(req.from)
	if err != nil {
		return nil, err
	}
	if err := pr.postRecvs(); err != nil {
		pr.close()
		return nil, err
	}
	if err := pr.qp.Connect(req.addr); err != nil {
		pr.close()
		return nil, err
	}
	ni.mu.Lock()
	if ni.dead.Load() {
		ni.mu.Unlock()
		pr.close() // outside the engine lock: closing waits for the provider's progress
		return nil, errPeerFailed
	}
	defer ni.mu.Unlock()
	ni.addPeer(pr)
	return pr.qp.Address(), nil
}

// listenerPollEvery is how many progress rounds pass between two polls of the
// process's rendezvous listener from progress. Each poll is a system call (about
// a microsecond here) even when nothing waits: once every 64 rounds it added a
// microsecond to every 8-byte put ping-pong; once every 4096 it costs nothing
// measurable, and a spinning caller still accepts within about a hundred
// microseconds (the listener's goroutine usually does sooner).
const listenerPollEvery = 4096

// pollListener accepts the connection requests waiting at the process's
// rendezvous listener without blocking, unless another goroutine is doing so.
func (p *Process) pollListener() {
	c := p.claimForPoll()
	if c == nil || c.ln == nil {
		return
	}
	if !c.lmu.TryLock() {
		return
	}
	defer c.lmu.Unlock()
	c.ln.poll(p)
}

// claimForPoll returns the process's pid claim.
func (p *Process) claimForPoll() *pidClaim {
	return p.claim.Load()
}

// yieldConnect is what an initiator does while it waits for a connection answer:
// progress on its own NI (which serves the requests addressed to it, so two NIs
// connecting to each other both proceed), and now and then a yield.
func (ni *NI) yieldConnect(i int) {
	ni.progressOnce(false)
	ni.proc.pollListener()
	if i&15 == 15 {
		runtime.Gosched()
	}
}

// serveWait is the listener's goroutine: it blocks until requests arrive and
// serves them, so a process whose application does not call in still accepts
// connections.
func (c *pidClaim) serveWait(p *Process) {
	defer c.wg.Done()
	for {
		c.lmu.Lock()
		pend := c.ln.pendingFDs()
		c.lmu.Unlock()
		if !c.ln.wait(pend) {
			break
		}
		c.lmu.Lock()
		c.ln.poll(p)
		c.lmu.Unlock()
	}
	c.lmu.Lock()
	c.ln.dropPending()
	c.lmu.Unlock()
}
