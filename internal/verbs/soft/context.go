package soft

import (
	"math/rand/v2"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/goportals/goportals/internal/napclock"
	"github.com/goportals/goportals/internal/verbs"
)

// Context is an open soft device: the shared segment that publishes its MR table,
// its queue pairs and completion queues, and the progress goroutine that completes
// one-sided operations when the application is not polling.
type Context struct {
	seg   *shm
	view  segView
	nonce uint64
	pid   int

	// uring holds the pins of registered regions: the process's pin holder (nil:
	// they are mlocked, and pinWhy says why).
	uring  *uringPinner
	pinWhy string

	mrMu    sync.Mutex
	freeMR  []uint32
	mrGen   [maxMR]uint32 // last generation per slot
	mrUses  [maxMR]uint32 // registrations per slot
	genStep uint32        // odd: consecutive generations of a slot
	mrs     [maxMR]atomic.Pointer[mr]

	mu     sync.Mutex // guards the object sets below
	qps    map[*qp]struct{}
	cqs    map[*cq]struct{}
	pds    map[*pd]struct{}
	nextQP uint32
	nextPD uint32
	active atomic.Pointer[[]*qp] // connected queue pairs, copy on write

	progMu sync.Mutex
	// inRound is set while a progress round (which uses regions unheld, see
	// localInRound) runs under progMu: Dereg waits for it to clear.
	inRound atomic.Bool
	// polled is set by every Poll and cleared by the progress goroutine: a poll
	// loop only reads it (no store on a line the goroutine reads) once it is set.
	polled atomic.Bool
	// life keeps the segment mapped: calls that touch it outside a progress round
	// (RegMR, Dereg, kick) hold it shared; Close takes it to unmap.
	life sync.RWMutex
	// kickCh ends the progress goroutine's nap early (a caller is about to
	// block), or its parked sleep (see parked).
	kickCh chan struct{}
	// While no queue pair joins it to another context of the node, the
	// progress goroutine sleeps parked in Go's scheduler (parked set), not on
	// the futex word (see run): peersCh wakes it when a queue pair joins the
	// active set, wakeCh when this process posts to a queue pair joined to
	// this context itself (wakePeer clears parked first).
	parked  atomic.Bool
	peersCh chan struct{}
	wakeCh  chan struct{}
	// sleepFor is how long the progress goroutine sleeps at most
	// (sleepTimeout; a test may lengthen it).
	sleepFor atomic.Int64
	closed   atomic.Bool
	stop     chan struct{}
	wg       sync.WaitGroup

	tcp   tcpState                   // the TCP path to other nodes
	links atomic.Pointer[[]*tcpLink] // its running links, copy on write
}

// Open opens a context on the soft device. The environment variable PTL_SOFT_PIN
// chooses how it pins registered memory (see PinMethod).
func Open() (*Context, error) {
	want, err := pinChoice()
	if err != nil {
		return nil, verbs.Errorf("open_device", verbs.ErrInvalidArgument, err)
	}
	return openPinned(want)
}

// openPinned opens a context that pins with method want (PinIOUring, PinMlock, or
// "" for the best available).
func openPinned(want string) (*Context, error) {
	if !supported {
		return nil, verbs.Errorf("open_device", verbs.ErrNotSupported, errNoPlatformErr())
	}
	seg, err := newShm("goportals-soft", segSize)
	if err != nil {
		return nil, verbs.Errorf("open_device", verbs.ErrNoResources, err)
	}
	c := &Context{seg: seg, view: segView{seg.mem}, nonce: rand.Uint64() | 1, pid: os.Getpid(),
		qps: map[*qp]struct{}{}, cqs: map[*cq]struct{}{}, pds: map[*pd]struct{}{},
		stop: make(chan struct{}), kickCh: make(chan struct{}, 1),
		peersCh: make(chan struct{}, 1), wakeCh: make(chan struct{}, 1)}
	c.sleepFor.Store(int64(sleepTimeout))
	c.genStep = (rand.Uint32() | 1) & genMask
	c.freeMR = make([]uint32, 0, maxMR)
	for i := range c.mrGen {
		c.mrGen[i] = rand.Uint32() & genMask
	}
	for i := maxMR - 1; i >= 0; i-- {
		c.freeMR = append(c.freeMR, uint32(i))
	}
	if err := c.setupPinning(want); err != nil {
		seg.close()
		return nil, err
	}
	c.view.init(c.pid, c.nonce)
	c.active.Store(&[]*qp{})
	c.wg.Add(1)
	go c.run()
	return c, nil
}

// Device returns the soft device.
func (c *Context) Device() verbs.Device { return device{} }

// Attr returns the device limits.
func (c *Context) Attr() verbs.DeviceAttr { return attr }

// pd is a protection domain.
type pd struct {
	ctx  *Context
	id   uint32
	nmr  int // guarded by ctx.mrMu
	nqp  atomic.Int32
	dead atomic.Bool
}

// AllocPD allocates a protection domain.
func (c *Context) AllocPD() (verbs.PD, error) {
	if c.closed.Load() {
		return nil, verbs.Errorf("alloc_pd", verbs.ErrClosed, nil)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.nextPD++
	p := &pd{ctx: c, id: c.nextPD}
	c.pds[p] = struct{}{}
	return p, nil
}

// Close deallocates the PD when it has no regions or queue pairs left.
func (p *pd) Close() error {
	p.ctx.mrMu.Lock()
	busy := p.nmr > 0
	p.ctx.mrMu.Unlock()
	if busy || p.nqp.Load() > 0 {
		return verbs.Errorf("dealloc_pd", verbs.ErrBusy, nil)
	}
	if !p.dead.CompareAndSwap(false, true) {
		return verbs.Errorf("dealloc_pd", verbs.ErrClosed, nil)
	}
	p.ctx.mu.Lock()
	delete(p.ctx.pds, p)
	p.ctx.mu.Unlock()
	return nil
}

// Close destroys every queue pair (flushing their work), stops progress,
// deregisters every region and unmaps the segment.
func (c *Context) Close() error {
	if !c.closed.CompareAndSwap(false, true) {
		return verbs.Errorf("close_device", verbs.ErrClosed, nil)
	}
	c.mu.Lock()
	qps := make([]*qp, 0, len(c.qps))
	for q := range c.qps {
		qps = append(qps, q)
	}
	c.mu.Unlock()
	for _, q := range qps {
		q.destroy()
	}
	if c.tcp.ln != nil {
		c.tcp.ln.Close()
		c.tcp.mu.Lock()
		for _, e := range c.tcp.early {
			e.conn.Close()
		}
		c.tcp.early = nil
		c.tcp.mu.Unlock()
	}
	close(c.stop)
	futexWake(c.view.sleepWord())
	c.wg.Wait()
	c.closeSet()
	c.life.Lock()
	defer c.life.Unlock()
	for i := range c.mrs {
		if m := c.mrs[i].Load(); m != nil && m.dead.CompareAndSwap(false, true) {
			m.dereg()
		}
	}
	c.mu.Lock()
	for q := range c.cqs {
		if q.closed.CompareAndSwap(false, true) {
			close(q.done)
		}
	}
	c.mu.Unlock()
	c.seg.close()
	return nil
}

// progress runs one round over the connected queue pairs unless another goroutine
// is running one. It returns the number of events handled.
func (c *Context) progress() int {
	if !c.progMu.TryLock() {
		return 0
	}
	n := 0
	c.inRound.Store(true)
	for _, q := range *c.active.Load() {
		if q.hasWork() {
			n += q.progress()
		}
	}
	c.inRound.Store(false)
	c.progMu.Unlock()
	return n + c.pollLinksAfter(n)
}

func (c *Context) addLink(l *tcpLink) {
	c.mu.Lock()
	var old []*tcpLink
	if p := c.links.Load(); p != nil {
		old = *p
	}
	n := append(append(make([]*tcpLink, 0, len(old)+1), old...), l)
	c.links.Store(&n)
	c.mu.Unlock()
}

func (c *Context) removeLink(l *tcpLink) {
	c.mu.Lock()
	if p := c.links.Load(); p != nil {
		n := make([]*tcpLink, 0, len(*p))
		for _, x := range *p {
			if x != l {
				n = append(n, x)
			}
		}
		c.links.Store(&n)
	}
	c.mu.Unlock()
}

// markPolled records that the application polls (see polled).
func (c *Context) markPolled() {
	if !c.polled.Load() {
		c.polled.Store(true)
	}
	if !c.tcp.polled.Load() {
		c.tcp.polled.Store(true)
	}
}

// kick wakes the progress goroutine if it naps or sleeps, and the TCP poller.
func (c *Context) kick() {
	select {
	case c.kickCh <- struct{}{}:
	default:
	}
	c.wakePoller()
	c.life.RLock()
	defer c.life.RUnlock()
	if c.closed.Load() {
		return
	}
	w := c.view.sleepWord()
	if atomic.LoadUint32(w) == 1 && atomic.CompareAndSwapUint32(w, 1, 0) {
		futexWake(w)
	}
}

// Progress goroutine tuning. While the application polls (its poll count moves), the
// goroutine stays off the CPU; otherwise it spins for idleSpin empty rounds, then
// sleeps on the segment's futex word, which a peer that posts to us clears and wakes
// (parked in Go's scheduler instead while every queue pair it serves is joined to
// this context itself: see ownPeersOnly).
const (
	idleSpin     = 256
	sleepTimeout = 20 * time.Millisecond
	peerCheck    = 10 * time.Millisecond
)

func (c *Context) run() {
	defer c.wg.Done()
	w := c.view.sleepWord()
	sleep := time.NewTimer(sleepTimeout)
	sleep.Stop()
	defer sleep.Stop()
	lastCheck := time.Now()
	idle := 0
	for {
		select {
		case <-c.stop:
			return
		default:
		}
		if c.progress() > 0 {
			idle = 0
			continue
		}
		if now := time.Now(); now.Sub(lastCheck) > peerCheck {
			lastCheck = now
			c.checkPeers()
		}
		if c.polled.Load() {
			// The nap is the process's, shared with the engine's progress
			// goroutine and the TCP poller (one wake for all), and grows while
			// callers keep polling (see napclock).
			c.polled.Store(false)
			idle = 0
			select {
			case <-napclock.Process().Nap():
			case <-c.kickCh:
				napclock.Process().Stopped() // a caller is about to block
				// It polled during the nap, which still runs for the other
				// helpers: do not go back into it.
				c.polled.Store(false)
			case <-c.stop:
				return
			}
			continue
		}
		if idle++; idle < idleSpin {
			if idle&63 == 0 {
				runtime.Gosched()
			} else {
				cpuPause()
			}
			continue
		}
		// Parked (see ownPeersOnly) or on the futex word: either way the
		// sleeper says so before its last look, so that a poster after that
		// look wakes it.
		park := c.ownPeersOnly()
		if park {
			c.parked.Store(true)
		} else {
			atomic.StoreUint32(w, 1)
		}
		if c.progress() > 0 {
			if park {
				c.parked.Store(false)
			} else {
				atomic.StoreUint32(w, 0)
			}
			idle = 0
			continue
		}
		if park {
			// No queue pair here joins another context of this node (an NI's
			// connection to its own process joins this one to itself, and TCP
			// links are the poller's): only this process posts to them, and
			// wakes us through parked and wakeCh (see wakePeer), so sleep
			// parked in Go's scheduler. (The futex word stays clear: another
			// context that clears it, one joined to a queue pair of ours not
			// or no longer active, has nothing for us.) A goroutine blocked
			// in futex(2) keeps its P until sysmon takes it back, and that
			// sets sysmon waking every 20 µs for the next millisecond, then
			// backing off over some 20 ms, each wake taking a core from the
			// threads that spin (a rank polling its links). addActive wakes
			// us (peersCh) when a queue pair joins.
			sleep.Reset(time.Duration(c.sleepFor.Load()))
			select {
			case <-sleep.C:
			case <-c.wakeCh:
			case <-c.kickCh:
			case <-c.peersCh:
			case <-c.stop:
				c.parked.Store(false)
				return
			}
			sleep.Stop()
			c.parked.Store(false)
			idle = idleSpin / 2
			continue
		}
		futexWait(w, 1, time.Duration(c.sleepFor.Load()))
		atomic.StoreUint32(w, 0)
		idle = idleSpin / 2
	}
}

// checkPeers fails the queue pairs whose peer process has exited.
func (c *Context) checkPeers() {
	c.progMu.Lock()
	defer c.progMu.Unlock()
	for _, q := range *c.active.Load() {
		q.mu.Lock()
		if q.peer != nil && !q.peerDead && q.peer.pidfd.exited() {
			q.peerDead = true
			q.dead.Store(true)
			if (q.sqHead < q.sqTail || q.rqHead < q.rqTail) && !q.msgWait.Load() && !q.in.ready() {
				// (else the progress round does, after its last messages: it
				// applies what the ring holds, and hands a message after a
				// SEND to PollMessages, before it fails the queue pair)
				q.peerGone()
			}
		}
		q.mu.Unlock()
	}
}

func (c *Context) addActive(q *qp) {
	c.mu.Lock()
	old := *c.active.Load()
	n := make([]*qp, len(old), len(old)+1)
	copy(n, old)
	n = append(n, q)
	c.active.Store(&n)
	c.mu.Unlock()
	select { // (it may sleep parked, where a peer's futex wake misses it: see run)
	case c.peersCh <- struct{}{}:
	default:
	}
}

// ownPeersOnly reports whether every active queue pair is joined to this
// context itself, so that only this process posts to them.
func (c *Context) ownPeersOnly() bool {
	for _, q := range *c.active.Load() {
		if !q.ownPeer.Load() {
			return false
		}
	}
	return true
}

// wakeOwn wakes the progress goroutine where it sleeps parked (see run).
func (c *Context) wakeOwn() {
	select {
	case c.wakeCh <- struct{}{}:
	default:
	}
}

func (c *Context) removeActive(q *qp) {
	c.mu.Lock()
	old := *c.active.Load()
	n := make([]*qp, 0, len(old))
	for _, x := range old {
		if x != q {
			n = append(n, x)
		}
	}
	c.active.Store(&n)
	c.mu.Unlock()
}
