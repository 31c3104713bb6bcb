package nic

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/goportals/goportals/internal/mdreg"
	"github.com/goportals/goportals/internal/verbs"
	"github.com/goportals/goportals/me"
	"github.com/goportals/goportals/regcache"
)

// atomicMax is the largest atomic an NI grants: what fits inline, cut to whole
// elements of every datatype (32 bytes is the largest), because clients cut long
// atomics into pieces of max_atomic_size bytes.
const atomicMax = eagerMax &^ 31

// maxLimits are the largest limits an NI grants, and the limits of an NIInit
// without desired limits (or of the desired fields left zero); a desired value
// above one is cut to it.
var maxLimits = Limits{
	MaxEntries: 1 << 20, MaxUnexpectedHeaders: 1 << 16, MaxMDs: 1 << 16, MaxEQs: 1 << 10,
	MaxCTs: 1 << 12, MaxPTIndex: 255, MaxIovecs: 1 << 16, MaxListSize: 1 << 20,
	MaxTriggeredOps: 1 << 16, MaxMsgSize: 1<<31 - 1, MaxAtomicSize: atomicMax,
	MaxFetchAtomicSize: atomicMax, MaxWAWOrderedSize: eagerMax, MaxWAROrderedSize: eagerMax,
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
	refs   int       // NIInit calls not yet matched by Fini (guarded by proc.mu)

	vctx verbs.Context
	pd   verbs.PD
	cq   verbs.CQ

	plist atomic.Pointer[[]*peer] // every connection, indexed by peer.idx (copy on write under mu)

	mu          sync.Mutex                  // the engine lock: everything below
	logical     atomic.Pointer[[]ProcessID] // the logical map (nil: none yet), replaced whole by SetMap
	mapSet      bool                        // SetMap set the map (a job's map may still be replaced)
	mapGen      uint32                      // bumped on every map change: peers cache their rank by it
	selfRank    Rank                        // this NI's index in the logical map (RankAny: none)
	byPhys      map[physKey]*peer           // the connection to send on, by physical id
	lastKey     physKey                     // the last peer looked up (the common case: one target)
	lastPeer    *peer
	lastFast    atomic.Pointer[peer] // lastPeer, for the lock-free start (ops.go)
	noGoroutine bool                 // no progress goroutine: waits never sleep (see noProgressGoroutine)
	polls       uint32               // progress rounds, to poll the rendezvous listener now and then (under progMu)
	pts         []*pt
	nMD         int
	eqs         map[*EQ]struct{} // the live event queues: they die with the NI
	cts         map[*CT]struct{} // the live counting events: they die with the NI
	cells       *cellSlab        // where the counting events keep their values (first CTAlloc on)
	ops         map[uint64]*initOp
	nextOp      uint64
	tops        map[uint64]*targetOp
	status      [numSR]atomic.Uint64
	dead        atomic.Bool
	bundle      int
	evbuf       []me.Event
	buf1        []byte
	buf2        []byte
	direct      *directState // direct access (direct.go); nil when off

	queued    atomic.Int32 // engine sends waiting in peer queues
	trig      triggerRunner
	progMu    sync.Mutex    // one goroutine handles completions at a time
	appPolled atomic.Bool   // set by callers that drive progress, cleared by the progress goroutine
	appPolls  atomic.Uint64 // rounds callers drove, counted only for tests (countAppPolls)
	kickCh    chan struct{}
	wcs       [32]verbs.WorkCompletion
	recvQ     []verbs.WorkCompletion // receive completions polled and not yet handled (under progMu)
	mcq       verbs.MessageCQ        // the provider's message mode (nil: none), see progressLocked
	msgFn     verbs.MessageHandler   // ni.onMessage, made once
	mh        me.Header              // handleRequest's header to match (under mu)
	rcq       roundPoller            // mcq's round of messages then completions in one call (nil: none)
	msgRounds int                    // message rounds since the completion queue was last polled (under progMu)
	msgLongs  uint64                 // longs when the message round began (under progMu)
	longs     atomic.Uint64          // long transfers started by the target (see progressLocked)
	pushes    atomic.Uint64          // pushed long puts this NI wrote (Pushes)
	splits    atomic.Uint64          // pushed long puts this NI split as their target (Splits)
	regOnce   sync.Once
	reg       *mdreg.Registry
	regErr    error

	// pushHint: a pushed long put may wait for its FIN here (set as one starts,
	// cleared by pushNap when none does).
	pushHint atomic.Bool

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
// with the given options (PtlNIInit). It is local: the NI is reachable by its
// physical id (PhysID) at once, and connections to peers open on first use. Only a
// process made over a job Runtime exchanges its physical id with the job's other
// ranks when it takes its pid (its first NIInit), so its logical NIs start with the
// job's map; that first NIInit is then collective.
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
	ni, fresh, err := p.niInit(iface, opts, pid, desired)
	if fresh {
		// The connection to itself opens now (a process that targets itself does
		// so at once, often without waiting: the reference's tests sleep a few
		// milliseconds and look). A failure is retried on first use.
		ni.connectTo(ni.physID())
	}
	return ni, err
}

// niInit is NIInit under the process lock; fresh says the NI is new.
func (p *Process) niInit(iface Interface, opts NIOptions, pid PID, desired *Limits) (_ *NI, fresh bool, _ error) {
	const name = "PtlNIInit"
	if iface != IfaceDefault && iface != 0 {
		return nil, false, opErr(name, ArgInvalid, fmt.Errorf("no interface %d", iface))
	}
	slot, ok := niSlot(opts)
	if !ok {
		return nil, false, opErr(name, ArgInvalid, fmt.Errorf("options %#x", uint32(opts)))
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, false, opErr(name, NoInit, fmt.Errorf("process closed"))
	}
	if ni := p.nis[slot]; ni != nil {
		ni.refs++
		return ni, false, nil
	}
	if pid > PIDAny {
		return nil, false, opErr(name, ArgInvalid, fmt.Errorf("pid %#x above PID_ANY", uint32(pid)))
	}
	// The pin cache is made on first use: its environment knobs are checked now.
	if err := regcache.CheckEnv(); err != nil {
		return nil, false, opErr(name, Fail, err)
	}
	// All NIs of a process have its pid: the first claims it on the node (PID_ANY: a
	// free one), the others take it and refuse any other.
	claim := p.pid
	if claim == nil {
		var err error
		if claim, err = claimPID(pid); err != nil {
			switch {
			case errors.Is(err, errPIDInUse):
				return nil, false, opErr(name, PIDInUse, fmt.Errorf("pid %d: %w", pid, err))
			case errors.Is(err, errNoFreePID):
				return nil, false, opErr(name, NoSpace, err)
			}
			return nil, false, opErr(name, Fail, err)
		}
	} else if pid != PIDAny && pid != claim.pid {
		return nil, false, opErr(name, ArgInvalid, fmt.Errorf("pid %d: the NIs of this process have pid %d", pid, claim.pid))
	}
	lim := grantLimits(desired)
	ni := &NI{proc: p, slot: slot, opts: opts, limits: lim, refs: 1,
		self: ProcessID{NID: nodeNID(), PID: claim.pid, Rank: RankAny}, selfRank: RankAny,
		pts: make([]*pt, lim.MaxPTIndex+1), ops: map[uint64]*initOp{}, tops: map[uint64]*targetOp{},
		eqs: map[*EQ]struct{}{}, cts: map[*CT]struct{}{}, byPhys: map[physKey]*peer{},
		stop: make(chan struct{}), kickCh: make(chan struct{}, 1)}
	fail := func(err error) (*NI, bool, error) {
		ni.release()
		if p.pid == nil {
			claim.release()
			p.claim.Store(nil)
			p.jobMap = nil
		}
		if errors.Is(err, verbs.ErrMemlock) || errors.Is(err, verbs.ErrNoResources) {
			return nil, false, opErr(name, NoSpace, err)
		}
		return nil, false, opErr(name, Fail, err)
	}
	if err := ni.open(); err != nil {
		return fail(err)
	}
	if p.pid == nil {
		// A new pid: requests to it reach this process from now on, and a process
		// of a job learns the physical ids of its peers (see jobmap.go).
		claim.serveFor(p)
		if p.rt != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			err := p.exchangeJobMap(ctx, ni.self)
			cancel()
			if err != nil {
				return fail(err)
			}
		}
	}
	if ni.Logical() && p.jobMap != nil {
		ni.setLogical(p.jobMap)
	}
	ni.trig.wake = make(chan struct{}, 1)
	// Direct access before any goroutine of the NI runs (they read ni.direct);
	// listed for md's Free hook only once set.
	ni.direct = newDirect(ni)
	directRegister(ni)
	if ni.noGoroutine = noProgressGoroutine(); ni.noGoroutine {
		ni.wg.Add(1) // progress only inside the calls
	} else {
		ni.wg.Add(2)
		go ni.run()
	}
	go ni.runTriggers()
	p.nis[slot] = ni
	p.pid = claim
	return ni, true, nil
}

// open opens the verbs objects the NI's connections share: a context, a
// protection domain and one completion queue (which grows as connections come).
func (ni *NI) open() error {
	var err error
	if ni.vctx, err = ni.proc.dev.Open(); err != nil {
		return err
	}
	if ni.pd, err = ni.vctx.AllocPD(); err != nil {
		return err
	}
	if ni.cq, err = ni.vctx.CreateCQ(4 * (recvDepth + sendDepth)); err != nil {
		return err
	}
	if mcq, ok := ni.cq.(verbs.MessageCQ); ok && !testNoMessages {
		ni.mcq, ni.msgFn = mcq, ni.onMessage
		ni.rcq, _ = ni.cq.(roundPoller)
	}
	return nil
}

// release closes the verbs objects (the context closes what it holds).
func (ni *NI) release() {
	for _, pr := range ni.peerList() {
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
		p.claim.Store(nil)
		p.jobMap = nil
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
	ni.directClose() // no peer stores into our entries or counters from here on
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
	ni.mu.Lock()
	cells := ni.cells
	ni.cells = nil
	ni.mu.Unlock()
	if cells != nil {
		putSlab(cells)
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
