package nic

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/goportals/goportals/internal/verbs"
	"github.com/goportals/goportals/md"
	"github.com/goportals/goportals/me"
	"github.com/goportals/goportals/regcache"
)

// maxLimits are the largest limits an NI grants, and the limits of an NIInit
// without desired limits (or of the desired fields left zero); a desired value
// above one is cut to it.
var maxLimits = Limits{
	MaxEntries: 1 << 20, MaxUnexpectedHeaders: 1 << 16, MaxMDs: 1 << 16, MaxEQs: 1 << 10,
	MaxCTs: 1 << 12, MaxPTIndex: 255, MaxIovecs: 1 << 16, MaxListSize: 1 << 20,
	MaxTriggeredOps: 1 << 16, MaxMsgSize: 1<<31 - 1, MaxAtomicSize: eagerMax,
	MaxFetchAtomicSize: eagerMax, MaxWAWOrderedSize: eagerMax, MaxWAROrderedSize: eagerMax,
	MaxVolatileSize: eagerMax,
}

// minLimits are the smallest limits an NI grants; a desired value below one is
// raised to it. They are the minimums of the reference's parameter table
// (max_pt_index 1, max_fetch_atomic_size 8; 0 for the others), except the ordering
// sizes, which the specification requires to be at least 64 (WAW) and 8 (WAR)
// bytes on every interface.
var minLimits = Limits{MaxPTIndex: 1, MaxFetchAtomicSize: 8, MaxWAWOrderedSize: 64, MaxWAROrderedSize: 8}

// NI is a network interface (a ptl_handle_ni_t): the portal table, the descriptors
// and entries bound to it, and the protocol engine that moves its data over one
// verbs context.
type NI struct {
	// Owner is the API's handle for this NI, set once by the API layer under its
	// own lock; the engine never reads it.
	Owner any

	proc   *Process
	slot   int
	opts   NIOptions
	limits Limits
	self   ProcessID // physical id
	rank   int
	refs   int // NIInit calls not yet matched by Fini (guarded by proc.mu)

	vctx verbs.Context
	pd   verbs.PD
	cq   verbs.CQ

	peers   []*peer
	physMap []ProcessID // rank -> physical id

	mu      sync.Mutex                  // the engine lock: everything below
	logical atomic.Pointer[[]ProcessID] // the logical map, replaced whole by SetMap
	pts     []*pt
	nMD     int
	eqs     map[*EQ]struct{} // the live event queues: they die with the NI
	cts     map[*CT]struct{} // the live counting events: they die with the NI
	ops     map[uint64]*initOp
	nextOp  uint64
	tops    map[uint64]*targetOp
	status  [numSR]atomic.Uint64
	dead    atomic.Bool
	bundle  int
	evbuf   []me.Event
	buf1    []byte
	buf2    []byte

	queued   atomic.Int32 // engine sends waiting in peer queues
	trig     triggerRunner
	progMu   sync.Mutex // one goroutine handles completions at a time
	appPolls atomic.Uint64
	kickCh   chan struct{}
	wcs      [32]verbs.WorkCompletion
	regOnce  sync.Once
	reg      *md.Registry
	regErr   error

	stop chan struct{}
	wg   sync.WaitGroup
}

func niSlot(opts NIOptions) (int, bool) {
	m := opts & (NIMatching | NINoMatching)
	l := opts & (NILogical | NIPhysical)
	if opts&^(NIMatching|NINoMatching|NILogical|NIPhysical) != 0 ||
		(m != NIMatching && m != NINoMatching) || (l != NILogical && l != NIPhysical) {
		return 0, false
	}
	s := 0
	if m == NINoMatching {
		s |= 1
	}
	if l == NILogical {
		s |= 2
	}
	return s, true
}

// grant is the value granted for a desired limit: clamped into [lo, hi] as the
// reference's chk_param does, the default hi when the field is zero or negative.
func grant[T int | uint64](desired, lo, hi T) T {
	switch {
	case desired <= 0:
		return hi
	case desired < lo:
		return lo
	case desired > hi:
		return hi
	}
	return desired
}

// grantLimits returns the limits an NI grants for desired (nil: the defaults).
// The fetching atomic size never exceeds the atomic size, whose check fetching
// atomics also pass in the reference.
func grantLimits(desired *Limits) Limits {
	var d Limits
	if desired != nil {
		d = *desired
	}
	lo, hi := minLimits, maxLimits
	atomic := grant(d.MaxAtomicSize, lo.MaxAtomicSize, hi.MaxAtomicSize)
	return Limits{
		MaxEntries:           grant(d.MaxEntries, lo.MaxEntries, hi.MaxEntries),
		MaxUnexpectedHeaders: grant(d.MaxUnexpectedHeaders, lo.MaxUnexpectedHeaders, hi.MaxUnexpectedHeaders),
		MaxMDs:               grant(d.MaxMDs, lo.MaxMDs, hi.MaxMDs),
		MaxEQs:               grant(d.MaxEQs, lo.MaxEQs, hi.MaxEQs),
		MaxCTs:               grant(d.MaxCTs, lo.MaxCTs, hi.MaxCTs),
		MaxPTIndex:           grant(d.MaxPTIndex, lo.MaxPTIndex, hi.MaxPTIndex),
		MaxIovecs:            grant(d.MaxIovecs, lo.MaxIovecs, hi.MaxIovecs),
		MaxListSize:          grant(d.MaxListSize, lo.MaxListSize, hi.MaxListSize),
		MaxTriggeredOps:      grant(d.MaxTriggeredOps, lo.MaxTriggeredOps, hi.MaxTriggeredOps),
		MaxMsgSize:           grant(d.MaxMsgSize, lo.MaxMsgSize, hi.MaxMsgSize),
		MaxAtomicSize:        atomic,
		MaxFetchAtomicSize:   min(grant(d.MaxFetchAtomicSize, lo.MaxFetchAtomicSize, hi.MaxFetchAtomicSize), atomic),
		MaxWAWOrderedSize:    grant(d.MaxWAWOrderedSize, lo.MaxWAWOrderedSize, hi.MaxWAWOrderedSize),
		MaxWAROrderedSize:    grant(d.MaxWAROrderedSize, lo.MaxWAROrderedSize, hi.MaxWAROrderedSize),
		MaxVolatileSize:      grant(d.MaxVolatileSize, lo.MaxVolatileSize, hi.MaxVolatileSize),
	}
}

// NIInit initializes (or, when it exists, references again) the network interface
// with the given options (PtlNIInit). It is collective: every rank of the job calls
// it with the same options in the same order, since the NIs connect to each other.
//
// Each field of desired is granted clamped into the range the NI supports (see
// Limits); a zero field, or a nil desired, asks for the largest value. The ordering
// sizes are never below the specification's minimums (64 bytes for WAW, 8 for WAR).
// A second NIInit of an existing NI ignores pid and desired and returns it, as the
// specification says.
//
// The NIs of a process share one physical id, unique on the node: pid, or a free
// one for PIDAny. A pid taken by another process is PIDInUse; one other than the
// pid of the process's other NIs, or above PIDAny, is ArgInvalid (as the reference
// answers). A bad
// environment knob (see regcache.CheckEnv) is Fail.
func (p *Process) NIInit(iface Interface, opts NIOptions, pid PID, desired *Limits) (*NI, error) {
	const name = "PtlNIInit"
	if iface != IfaceDefault && iface != 0 {
		return nil, opErr(name, ArgInvalid, fmt.Errorf("no interface %d", iface))
	}
	slot, ok := niSlot(opts)
	if !ok {
		return nil, opErr(name, ArgInvalid, fmt.Errorf("options %#x", uint32(opts)))
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, opErr(name, NoInit, fmt.Errorf("process closed"))
	}
	if ni := p.nis[slot]; ni != nil {
		ni.refs++
		return ni, nil
	}
	if pid > PIDAny {
		return nil, opErr(name, ArgInvalid, fmt.Errorf("pid %#x above PID_ANY", uint32(pid)))
	}
	// The pin cache is made on first use: its environment knobs are checked now.
	if err := regcache.CheckEnv(); err != nil {
		return nil, opErr(name, Fail, err)
	}
	// All NIs of a process have its pid: the first claims it on the node (PID_ANY: a
	// free one), the others take it and refuse any other.
	claim := p.pid
	if claim == nil {
		var err error
		if claim, err = claimPID(pid); err != nil {
			switch {
			case errors.Is(err, errPIDInUse):
				return nil, opErr(name, PIDInUse, fmt.Errorf("pid %d", pid))
			case errors.Is(err, errNoFreePID):
				return nil, opErr(name, NoSpace, err)
			}
			return nil, opErr(name, Fail, err)
		}
	} else if pid != PIDAny && pid != claim.pid {
		return nil, opErr(name, ArgInvalid, fmt.Errorf("pid %d: the NIs of this process have pid %d", pid, claim.pid))
	}
	lim := grantLimits(desired)
	rank := p.rt.Rank()
	ni := &NI{proc: p, slot: slot, opts: opts, limits: lim, rank: rank, refs: 1,
		self: ProcessID{NID: 0, PID: claim.pid, Rank: Rank(rank)},
		pts:  make([]*pt, lim.MaxPTIndex+1), ops: map[uint64]*initOp{}, tops: map[uint64]*targetOp{},
		eqs: map[*EQ]struct{}{}, cts: map[*CT]struct{}{},
		stop: make(chan struct{}), kickCh: make(chan struct{}, 1)}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := ni.connect(ctx); err != nil {
		ni.release()
		if p.pid == nil {
			claim.release()
		}
		if errors.Is(err, verbs.ErrMemlock) || errors.Is(err, verbs.ErrNoResources) {
			return nil, opErr(name, NoSpace, err)
		}
		return nil, opErr(name, Fail, err)
	}
	ni.trig.wake = make(chan struct{}, 1)
	ni.wg.Add(2)
	go ni.run()
	go ni.runTriggers()
	p.nis[slot] = ni
	p.pid = claim
	return ni, nil
}

// connect opens the verbs objects, creates a queue pair per rank, exchanges the
// addresses and physical ids through the runtime, and connects.
func (ni *NI) connect(ctx context.Context) error {
	var err error
	if ni.vctx, err = ni.proc.dev.Open(); err != nil {
		return err
	}
	if ni.pd, err = ni.vctx.AllocPD(); err != nil {
		return err
	}
	rt := ni.proc.rt
	size := rt.Size()
	if ni.cq, err = ni.vctx.CreateCQ(size*(recvDepth+sendDepth) + 64); err != nil {
		return err
	}
	ni.peers = make([]*peer, size)
	for r := range ni.peers {
		if ni.peers[r], err = ni.newPeer(r); err != nil {
			return err
		}
		if err := rt.Put(fmt.Sprintf("ni%d.qp%d", ni.slot, r), ni.peers[r].qp.Address()); err != nil {
			return err
		}
	}
	var id [8]byte
	binary.LittleEndian.PutUint32(id[0:], uint32(ni.self.NID))
	binary.LittleEndian.PutUint32(id[4:], uint32(ni.self.PID))
	if err := rt.Put(fmt.Sprintf("ni%d.id", ni.slot), id[:]); err != nil {
		return err
	}
	if err := rt.Fence(ctx); err != nil {
		return err
	}
	ni.physMap = make([]ProcessID, size)
	for r := range ni.peers {
		addr, err := rt.Get(ctx, r, fmt.Sprintf("ni%d.qp%d", ni.slot, ni.rank))
		if err != nil {
			return err
		}
		if err := ni.peers[r].qp.Connect(addr); err != nil {
			return err
		}
		v, err := rt.Get(ctx, r, fmt.Sprintf("ni%d.id", ni.slot))
		if err != nil || len(v) != 8 {
			return fmt.Errorf("physical id of rank %d: %v", r, err)
		}
		ni.physMap[r] = ProcessID{NID: NID(binary.LittleEndian.Uint32(v)), PID: PID(binary.LittleEndian.Uint32(v[4:])), Rank: Rank(r)}
	}
	for _, pr := range ni.peers {
		if err := pr.postRecvs(); err != nil {
			return err
		}
	}
	m := append([]ProcessID(nil), ni.physMap...)
	ni.logical.Store(&m)
	return nil
}

// release closes the verbs objects (the context closes what it holds).
func (ni *NI) release() {
	for _, pr := range ni.peers {
		if pr != nil {
			pr.close()
		}
	}
	if ni.vctx != nil {
		ni.vctx.Close()
	}
}

// Fini releases one NIInit (PtlNIFini); the last one tears the NI down: its
// entries, descriptors and queues are released and its connections closed.
func (ni *NI) Fini() error {
	if ni == nil {
		return nilHandle("PtlNIFini", "NI")
	}
	p := ni.proc
	p.mu.Lock()
	if p.nis[ni.slot] != ni {
		p.mu.Unlock()
		return opErr("PtlNIFini", ArgInvalid, fmt.Errorf("NI already finalized"))
	}
	if ni.refs--; ni.refs > 0 {
		p.mu.Unlock()
		return nil
	}
	p.nis[ni.slot] = nil
	if p.nis == [4]*NI{} {
		// The process has no NI left: its pid is free on the node again.
		p.pid.release()
		p.pid = nil
	}
	p.mu.Unlock()
	ni.shutdown()
	return nil
}

func (ni *NI) shutdown() {
	if !ni.dead.CompareAndSwap(false, true) {
		return
	}
	close(ni.stop)
	ni.wg.Wait()
	// No caller drives progress from here on (progressOnce sees dead under progMu),
	// so nothing touches the queues while they are torn down.
	ni.progMu.Lock()
	defer ni.progMu.Unlock()
	ni.mu.Lock()
	// Operations still in flight will never be answered: complete them as
	// undeliverable and drop target operations, releasing every registration.
	for _, o := range ni.ops {
		ni.failOp(o)
	}
	for id, top := range ni.tops {
		if top.pinned != nil {
			top.pinned.Release()
			top.pinned = nil
		}
		delete(ni.tops, id)
	}
	for _, t := range ni.pts {
		if t != nil {
			t.releaseEntries()
		}
	}
	eqs, cts := ni.eqs, ni.cts
	ni.eqs, ni.cts = map[*EQ]struct{}{}, map[*CT]struct{}{}
	ni.mu.Unlock()
	// The event queues and counting events die with the NI: later uses are
	// ARG_INVALID and the calls waiting on them return INTERRUPTED. Freeing a counter
	// drops its triggered operations, whose cancellation takes the engine lock.
	for e := range eqs {
		e.q.Free()
	}
	for c := range cts {
		c.c.Free()
	}
	if ni.reg != nil {
		ni.reg.Close()
	}
	ni.release()
}

func (ni *NI) check(op string) error {
	if ni == nil {
		return nilHandle(op, "NI")
	}
	if ni.dead.Load() {
		return opErr(op, ArgInvalid, fmt.Errorf("NI finalized"))
	}
	return nil
}

// Limits returns the limits the NI granted (the actual limits of PtlNIInit).
func (ni *NI) Limits() Limits { return ni.limits }

// Options returns the NI's options.
func (ni *NI) Options() NIOptions { return ni.opts }

// Matching reports whether the NI matches (NIMatching).
func (ni *NI) Matching() bool { return ni.opts&NIMatching != 0 }

// Logical reports whether the NI addresses by rank (NILogical).
func (ni *NI) Logical() bool { return ni.opts&NILogical != 0 }

// ID returns the NI's process id (PtlGetId): on a logical NI its rank, the index
// of its physical id in the map SetMap set (the job's order until then); NID and
// PID on a physical one.
func (ni *NI) ID() (ProcessID, error) {
	if err := ni.check("PtlGetId"); err != nil {
		return ProcessID{}, err
	}
	if ni.Logical() {
		return ProcessID{Rank: ni.initiatorID().Rank}, nil
	}
	return ProcessID{NID: ni.self.NID, PID: ni.self.PID}, nil
}

// PhysID returns the NI's physical id (PtlGetPhysId).
func (ni *NI) PhysID() (ProcessID, error) {
	if err := ni.check("PtlGetPhysId"); err != nil {
		return ProcessID{}, err
	}
	return ProcessID{NID: ni.self.NID, PID: ni.self.PID}, nil
}

// UID returns the user id of the process (PtlGetUid).
func (ni *NI) UID() (UID, error) {
	if err := ni.check("PtlGetUid"); err != nil {
		return 0, err
	}
	return ni.proc.uid, nil
}

// Status reads a status register (PtlNIStatus).
func (ni *NI) Status(sr SR) (uint64, error) {
	if err := ni.check("PtlNIStatus"); err != nil {
		return 0, err
	}
	if sr < 0 || sr >= numSR {
		return 0, opErr("PtlNIStatus", ArgInvalid, fmt.Errorf("status register %d", sr))
	}
	return ni.status[sr].Load(), nil
}

// SetMap sets the rank-to-physical-id map of a logical NI (PtlSetMap).
func (ni *NI) SetMap(m []ProcessID) error {
	const op = "PtlSetMap"
	if err := ni.check(op); err != nil {
		return err
	}
	if !ni.Logical() {
		return opErr(op, ArgInvalid, fmt.Errorf("physical NI"))
	}
	if len(m) == 0 {
		return opErr(op, ArgInvalid, fmt.Errorf("empty map"))
	}
	for _, id := range m {
		if _, ok := ni.rankOfPhys(id); !ok {
			return opErr(op, ArgInvalid, fmt.Errorf("no process %d:%d in the job", id.NID, id.PID))
		}
	}
	// The caller's rank is its index in the map: a map without it gives it none,
	// which the reference refuses.
	if logicalIndex(m, ni.self) < 0 {
		return opErr(op, ArgInvalid, fmt.Errorf("the map does not hold this process (%d:%d)", ni.self.NID, ni.self.PID))
	}
	ni.mu.Lock()
	c := append([]ProcessID(nil), m...)
	ni.logical.Store(&c)
	ni.mu.Unlock()
	return nil
}

// Map returns the logical map (PtlGetMap).
func (ni *NI) Map() ([]ProcessID, error) {
	if err := ni.check("PtlGetMap"); err != nil {
		return nil, err
	}
	if !ni.Logical() {
		return nil, opErr("PtlGetMap", ArgInvalid, fmt.Errorf("physical NI"))
	}
	ni.mu.Lock()
	defer ni.mu.Unlock()
	return append([]ProcessID(nil), *ni.logical.Load()...), nil
}

// rankOfPhys finds the job rank of a physical id.
func (ni *NI) rankOfPhys(id ProcessID) (int, bool) {
	for r, p := range ni.physMap {
		if p.NID == id.NID && p.PID == id.PID {
			return r, true
		}
	}
	return 0, false
}

// peerOf resolves a target id to its connection. Called with ni.mu held.
func (ni *NI) peerOf(target ProcessID) (*peer, bool) {
	if ni.Logical() {
		logical := *ni.logical.Load()
		if int(target.Rank) >= len(logical) {
			return nil, false
		}
		r, ok := ni.rankOfPhys(logical[target.Rank])
		if !ok {
			return nil, false
		}
		return ni.peers[r], true
	}
	r, ok := ni.rankOfPhys(target)
	if !ok {
		return nil, false
	}
	return ni.peers[r], true
}

// idOfPeer names the process at the other end of pr: its physical id and its rank
// in the logical map (or its job rank when the map does not hold it). Called with
// ni.mu held.
func (ni *NI) idOfPeer(pr *peer) ProcessID {
	id := ni.physMap[pr.rank]
	id.Rank = Rank(pr.rank)
	if ni.Logical() {
		for r, p := range *ni.logical.Load() {
			if p.NID == id.NID && p.PID == id.PID {
				id.Rank = Rank(r)
				break
			}
		}
	}
	return id
}

// initiatorID is how this NI names itself in the messages it sends: its physical
// id, with its rank in the logical map on a logical NI.
func (ni *NI) initiatorID() ProcessID {
	id := ni.self
	if ni.Logical() {
		if r := logicalIndex(*ni.logical.Load(), id); r >= 0 {
			id.Rank = Rank(r)
		}
	}
	return id
}

// logicalIndex is the first index of the physical id of id in m, or -1.
func logicalIndex(m []ProcessID, id ProcessID) int {
	for r, p := range m {
		if p.NID == id.NID && p.PID == id.PID {
			return r
		}
	}
	return -1
}
