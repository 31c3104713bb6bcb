package soft

import (
	"errors"
	"os"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/goportals/goportals/internal/napclock"
)

// tcpPoller serves a context's links while nobody polls the context: one
// goroutine that waits in epoll_wait (level-triggered) until a socket holds
// data, has room for frames that wait (txWait), or an eventfd wakes it; then it
// reads and serves the links that are ready, sends the answers whose delay ran
// out, and retries the SENDs that wait for a receive. While callers poll (their
// rounds read the sockets without blocking) it naps on the process's clock
// (napclock), until that nap ends or a caller about to block kicks it
// (wakePoller): a thread woken in the kernel for
// every message would take a spinning caller's core on a busy host, and the
// caller finds the data itself. It ends when the context's last link is shut,
// and starts again with the next.
//
// Its wait in the kernel goes through Go's network poller: a duplicate of the
// epoll descriptor (itself pollable: readable while a socket of the set is
// ready) is registered there while the poller waits, and its goroutine parks
// with its processor free. (An epoll_wait made as a system call kept the
// processor until the runtime's monitor took it back, 20 µs to 10 ms later:
// with one processor, as a rank bound to one core has, the spinning caller
// waited that long.) The duplicate leaves the network poller when the poller
// goes back to napping: registered, every segment that arrives would wake the
// runtime's idle thread for nobody.
type tcpPoller struct {
	c      *Context
	ep     int // epoll descriptor
	evfd   int // eventfd: wakes the kernel wait
	woken  atomic.Bool
	kickCh chan struct{}       // ends the nap
	seen   *[]*tcpLink         // the link list last registered
	regs   map[*tcpLink]int32  // registered links and their epoll names
	byID   map[int32]*tcpLink  // epoll name → link (0 is the eventfd)
	next   int32               // the next name
	evs    [32]unix.EpollEvent // epoll_wait's results
	// While the poller waits in the kernel: the duplicate of ep registered
	// in Go's network poller, and its raw access (nil while it naps).
	net   *os.File
	netRC syscall.RawConn
	noNet bool // the network poller refused the set: epoll_wait directly
}

// tcpStallRetry is how often the poller retries a SEND that waits for a receive
// when no PostRecv wakes it (the receive's arrival wakes it at once).
const tcpStallRetry = time.Millisecond

// usePoller hands a link that is starting to the context's poller, starting the
// poller if none runs; false: there is none (the kernel refused epoll or an
// eventfd), and the link is watched the portable way.
func (c *Context) usePoller() bool {
	t := &c.tcp
	t.pmu.Lock()
	defer t.pmu.Unlock()
	if t.noPoller {
		return false
	}
	if t.poller == nil {
		p, err := newTCPPoller(c)
		if err != nil {
			t.noPoller = true
			return false
		}
		t.poller = p
		go p.run()
	}
	t.served++
	return true
}

// leavePoller says that a link served by the poller is shut.
func (c *Context) leavePoller() {
	t := &c.tcp
	t.pmu.Lock()
	t.served--
	if t.poller != nil {
		t.poller.wake()
	}
	t.pmu.Unlock()
}

// ackQueued is told that an answer waits to ride with a request: a poller
// waiting in the kernel without a bound must wake to bound its wait by the
// answer's delay (a caller that polled once queued it, and may not poll again).
func (c *Context) ackQueued() {
	if c.tcp.asleep.Load() {
		c.signalPoller(false)
	}
}

// rearmPoller is told that a link's held messages were handed out: the poller,
// which stopped watching its socket meanwhile, must watch it again before it
// waits in the kernel (it looks at rearm after it marks itself asleep).
func (c *Context) rearmPoller() {
	c.tcp.rearm.Store(true)
	if c.tcp.asleep.Load() {
		c.signalPoller(false)
	}
}

// wakePoller ends the poller's nap or kernel wait: a link started, a link's
// frames wait for room, a receive was posted for a SEND that waits for one, or
// a caller stops polling to block.
func (c *Context) wakePoller() { c.signalPoller(true) }

// signalPoller ends the poller's wait in the kernel, and its nap too where
// endNap. What matters only to the wait (an answer queued, a socket to watch
// again) leaves the nap alone, which ends in a new look anyway: a kick left for
// the nap would end the next one at once while callers poll, and the poller
// would go back to its wait, and into Go's network poller, at every message.
func (c *Context) signalPoller(endNap bool) {
	t := &c.tcp
	t.pmu.Lock()
	if p := t.poller; p != nil {
		if endNap {
			p.wake()
		} else {
			p.wakeWait()
		}
	}
	t.pmu.Unlock()
}

// unwatch stops watching a link whose socket failed (rxMu held, the socket
// still open): its end of file would wake the poller until the socket closes.
// (The poller's record of the link's interest stays: the link is failing.)
func (c *Context) unwatch(l *tcpLink) {
	if ep := c.tcp.pollerEp(); ep >= 0 {
		unix.EpollCtl(ep, unix.EPOLL_CTL_DEL, l.fd, nil)
	}
}

// pollerEp returns the poller's epoll descriptor (-1: none).
func (t *tcpState) pollerEp() int {
	t.pmu.Lock()
	defer t.pmu.Unlock()
	if t.poller == nil {
		return -1
	}
	return t.poller.ep
}

func newTCPPoller(c *Context) (*tcpPoller, error) {
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, err
	}
	// Non-blocking, as os.NewFile needs to register its duplicates in Go's
	// network poller (openNet; the flag belongs to the open file, which they
	// share). An epoll_wait with a timeout ignores it.
	if err := unix.SetNonblock(ep, true); err != nil {
		unix.Close(ep)
		return nil, err
	}
	evfd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		unix.Close(ep)
		return nil, err
	}
	if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, evfd, &unix.EpollEvent{Events: unix.EPOLLIN}); err != nil {
		unix.Close(ep)
		unix.Close(evfd)
		return nil, err
	}
	return &tcpPoller{c: c, ep: ep, evfd: evfd, kickCh: make(chan struct{}, 1),
		regs: map[*tcpLink]int32{}, byID: map[int32]*tcpLink{}, next: 1}, nil
}

// wake ends the poller's nap, or its kernel wait (once until it looks again).
func (p *tcpPoller) wake() {
	select {
	case p.kickCh <- struct{}{}:
	default:
	}
	p.wakeWait()
}

// wakeWait ends the poller's kernel wait (once until it looks again).
func (p *tcpPoller) wakeWait() {
	if !p.c.tcp.asleep.Load() || p.woken.Swap(true) {
		return
	}
	one := [8]byte{1}
	unix.Write(p.evfd, one[:])
}

func (p *tcpPoller) run() {
	polled := &p.c.tcp.polled
	clock := napclock.Process()
	napped := false // the last nap ran to its end with callers polling
	for {
		if !p.sync() {
			return
		}
		if polled.Load() {
			// Callers poll: nap on the process's clock, shared with the other
			// helpers, until it ends or a caller about to block kicks.
			polled.Store(false)
			p.closeNet()
			if napped {
				// They polled through a whole nap: the sockets leave the set
				// (not at every kick that ends a nap, a socket filling in a
				// bulk transfer: each would cost a call per link both ways).
				p.unwatchAll()
			}
			napped = true
			select {
			case <-clock.Nap():
			case <-p.kickCh:
				// (The polls made during the nap, which still runs for the
				// other helpers, do not send it back into it.)
				polled.Store(false)
				napped = false
			}
			continue
		}
		napped = false
		timeout := p.tend()
		p.c.tcp.asleep.Store(true)
		if polled.Load() || len(p.kickCh) > 0 || p.c.tcp.rearm.Load() {
			p.c.tcp.asleep.Store(false)
			select {
			case <-p.kickCh:
				// A caller about to block kicked: the polls it made before
				// do not send the poller into a nap it would wait through.
				polled.Store(false)
			default:
			}
			continue
		}
		n, err := p.wait(timeout)
		p.c.tcp.asleep.Store(false)
		if err != nil && err != unix.EINTR {
			// Not expected (the descriptors are ours): do not spin on it.
			time.Sleep(tcpStallRetry)
			continue
		}
		for i := 0; i < n; i++ {
			e := &p.evs[i]
			if e.Fd == 0 {
				var b [8]byte
				unix.Read(p.evfd, b[:])
				p.woken.Store(false)
				continue
			}
			l := p.byID[e.Fd]
			if l == nil {
				continue
			}
			if e.Events&unix.EPOLLOUT != 0 {
				l.flushTx()
			}
			if e.Events&^unix.EPOLLOUT != 0 {
				l.pollRx()
			}
		}
	}
}

// sync registers the links started since the last look and forgets the ones
// shut; it returns false (and the poller ends) when no link is served.
func (p *tcpPoller) sync() bool {
	c := p.c
	cur := c.links.Load()
	if cur != p.seen {
		p.seen = cur
		var ls []*tcpLink
		if cur != nil {
			ls = *cur
		}
		keep := make(map[*tcpLink]bool, len(ls))
		for _, l := range ls {
			if !l.viaPoller {
				continue
			}
			keep[l] = true
			if _, ok := p.regs[l]; !ok {
				id := p.next
				p.next++
				p.regs[l] = id
				p.byID[id] = l
				p.interest(l, id, unix.EPOLLIN)
			}
		}
		for l, id := range p.regs {
			if !keep[l] {
				// Shut: its socket is closed, which took it out of the epoll set
				// (its number may already name another socket: no EPOLL_CTL_DEL).
				delete(p.regs, l)
				delete(p.byID, id)
			}
		}
	}
	t := &c.tcp
	t.pmu.Lock()
	defer t.pmu.Unlock()
	if t.served > 0 {
		return true
	}
	t.poller = nil
	p.closeNet()
	unix.Close(p.ep)
	unix.Close(p.evfd)
	return false
}

// unwatchAll takes every link's socket out of the poller's set once callers
// have polled through a whole nap (run): they read the sockets meanwhile, and an epoll watch costs every segment that
// arrives a callback in the kernel's delivery (an 8-byte ping-pong over
// loopback was 1-5 % slower with one watch more: four alternated runs). tend
// watches them again before the poller next waits in the kernel, and a socket
// that received meanwhile is then ready at once (level-triggered).
func (p *tcpPoller) unwatchAll() {
	for l, id := range p.regs {
		p.interest(l, id, 0)
	}
}

// interest sets the epoll events the poller waits for on l's socket (0: none,
// the link is left out of the set), under l.rxMu: a shut link's socket, which
// may be closed, is left alone.
func (p *tcpPoller) interest(l *tcpLink, id int32, want uint32) {
	if l.epIn == want {
		return
	}
	l.rxMu.Lock()
	defer l.rxMu.Unlock()
	if l.failed.Load() || l.ended.Load() {
		return
	}
	var err error
	ev := unix.EpollEvent{Events: want, Fd: id}
	switch {
	case want == 0:
		err = unix.EpollCtl(p.ep, unix.EPOLL_CTL_DEL, l.fd, nil)
	case l.epIn == 0:
		err = unix.EpollCtl(p.ep, unix.EPOLL_CTL_ADD, l.fd, &ev)
	default:
		err = unix.EpollCtl(p.ep, unix.EPOLL_CTL_MOD, l.fd, &ev)
	}
	p.c.tcp.watchChanges.Add(1)
	if err != nil {
		l.lost(err)
		return
	}
	l.epIn = want
}

// tend runs the timed work after a wait: answers whose delay ran out are sent,
// SENDs waiting for a receive retried, and each link's interest follows its
// state (no reading while a SEND waits for a receive; room to write while
// frames wait). It returns how long the next wait may last (-1: no bound).
func (p *tcpPoller) tend() time.Duration {
	var now int64
	timeout := time.Duration(-1)
	bound := func(d time.Duration) {
		if timeout < 0 || d < timeout {
			timeout = max(d, 0)
		}
	}
	if p.c.tcp.rearm.Load() {
		p.c.tcp.rearm.Store(false) // (before the links' msgHeld are read)
	}
	for l, id := range p.regs {
		if l.failed.Load() {
			continue
		}
		if l.stalled.Load() || l.rbLeft.Load() {
			l.pollRx()
		}
		if due := l.ackDue.Load(); due != 0 {
			if now == 0 {
				now = tcpClock()
			}
			if due <= now {
				l.flushTx()
			} else {
				bound(time.Duration(due - now))
			}
		}
		want := uint32(0)
		if l.stalled.Load() {
			bound(tcpStallRetry)
		} else if !l.msgHeld.Load() {
			// (a held message: data behind it waits until PollMessages
			// takes it, see rearmPoller)
			want = unix.EPOLLIN
		}
		if l.txWait.Load() {
			want |= unix.EPOLLOUT
		}
		p.interest(l, id, want)
		if l.armed.Load() && l.quiet.Load() <= tcpHotLooks {
			// It received again, served by the poller: no caller's round
			// takes it out of the look set.
			p.c.setDisarm(l)
		}
	}
	return timeout
}

// wait waits for the set's events at most d (-1: without bound) parked in Go's
// network poller (see tcpPoller), or with epoll_wait where the network poller
// cannot take the set.
func (p *tcpPoller) wait(d time.Duration) (int, error) {
	if p.net == nil && !p.noNet {
		p.openNet()
	}
	if p.net == nil {
		return epollWait(p.ep, p.evs[:], d)
	}
	var dl time.Time
	if d >= 0 {
		dl = time.Now().Add(d)
	}
	if err := p.net.SetReadDeadline(dl); err != nil {
		// Not in the network poller after all (os.ErrNoDeadline).
		p.closeNet()
		p.noNet = true
		return epollWait(p.ep, p.evs[:], d)
	}
	n := 0
	var werr error
	err := p.netRC.Read(func(fd uintptr) bool {
		r, _, e := unix.RawSyscall6(unix.SYS_EPOLL_PWAIT, fd, uintptr(unsafe.Pointer(&p.evs[0])), uintptr(len(p.evs)), 0, 0, 0)
		switch e {
		case 0:
			// None (a caller's round read what woke it): park until the
			// set is readable, unless callers poll: then nap instead (the
			// duplicate, registered, would wake a thread at every segment).
			n = int(r)
			return n > 0 || p.c.tcp.polled.Load()
		case unix.EINTR:
			return true // (the caller looks again)
		}
		werr = e
		return true
	})
	if err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return 0, nil
		}
		return 0, err
	}
	return n, werr
}

// openNet registers a duplicate of the epoll descriptor in Go's network poller.
// Where it cannot (no descriptor left, say), this wait is an epoll_wait and the
// next one tries again; where the network poller refuses the set, wait sets
// noNet.
func (p *tcpPoller) openNet() {
	fd, err := unix.FcntlInt(uintptr(p.ep), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return
	}
	f := os.NewFile(uintptr(fd), "goportals-tcp-poller")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return
	}
	p.net, p.netRC = f, rc
}

// closeNet takes the duplicate out of Go's network poller and closes it.
func (p *tcpPoller) closeNet() {
	if p.net != nil {
		p.net.Close()
		p.net, p.netRC = nil, nil
	}
}

// epollWait waits for events at most d (-1: without bound), to the nanosecond
// where the kernel has epoll_pwait2.
func epollWait(ep int, evs []unix.EpollEvent, d time.Duration) (int, error) {
	if d < 0 {
		return unix.EpollWait(ep, evs, -1)
	}
	if !noPwait2.Load() {
		ts := unix.NsecToTimespec(int64(d))
		r, _, e := unix.Syscall6(unix.SYS_EPOLL_PWAIT2, uintptr(ep), uintptr(unsafe.Pointer(&evs[0])), uintptr(len(evs)),
			uintptr(unsafe.Pointer(&ts)), 0, 0)
		if e == 0 {
			return int(r), nil
		}
		if e != unix.ENOSYS {
			return 0, e
		}
		noPwait2.Store(true)
	}
	return unix.EpollWait(ep, evs, int((d+time.Millisecond-1)/time.Millisecond))
}

// noPwait2 records that the kernel lacks epoll_pwait2 (before Linux 5.11).
var noPwait2 atomic.Bool
