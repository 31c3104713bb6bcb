package soft

import (
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// lookEvents is what one look at the set can report.
type lookEvents [32]unix.EpollEvent

// setAdd gives a link the poller serves its slot in the context's look set
// (before the link is listed); where there is no set, the link is looked at
// alone. Its socket joins the set only while the link is idle (setArm).
func (c *Context) setAdd(l *tcpLink) {
	s := &c.tcp.set
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.tried {
		s.tried = true
		if ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC); err == nil {
			s.ep = ep
			s.live.Store(true)
		}
	}
	if !s.live.Load() {
		return
	}
	id := s.takeSlot()
	s.setSlot(id, l)
	l.slot, l.inSet = id, true
}

// setArm puts an idle link's socket in the look set. False: it is not there
// (the set is closed, the link shut, or the kernel refused): the link is
// looked at alone.
func (c *Context) setArm(l *tcpLink) bool {
	s := &c.tcp.set
	s.mu.Lock()
	defer s.mu.Unlock()
	if l.armed.Load() {
		return true
	}
	// (shut sets failed before setRemove, which waits for mu, closes the
	// socket: a link not failed here keeps its descriptor until mu is free.)
	if l.failed.Load() || l.ended.Load() || !s.live.Load() {
		return false
	}
	if testArmFails || unix.EpollCtl(s.ep, unix.EPOLL_CTL_ADD, l.fd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: l.slot}) != nil {
		l.noArm.Store(true) // (not tried again: the link is looked at alone)
		return false
	}
	l.armed.Store(true)
	return true
}

// testArmFails, set by a test, makes the kernel's refusal of setArm's add.
var testArmFails bool

// setDisarm takes a link that received again out of the look set: its own
// rounds read it, and a second epoll watch on its socket would cost every
// segment that arrives a callback in the kernel's delivery (an 8-byte put
// ping-pong over TCP was 3 % slower with every link in the set for good).
func (c *Context) setDisarm(l *tcpLink) {
	s := &c.tcp.set
	s.mu.Lock()
	defer s.mu.Unlock()
	if !l.armed.Load() || l.failed.Load() {
		return // (a shut link leaves in setRemove)
	}
	if s.live.Load() {
		unix.EpollCtl(s.ep, unix.EPOLL_CTL_DEL, l.fd, nil)
	}
	l.armed.Store(false)
}

// setRemove takes a shut link out of the look set (before its socket closes).
func (c *Context) setRemove(l *tcpLink) {
	if !l.inSet {
		return
	}
	s := &c.tcp.set
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.live.Load() && l.armed.Load() {
		unix.EpollCtl(s.ep, unix.EPOLL_CTL_DEL, l.fd, nil)
		l.armed.Store(false)
	}
	if s.slotAt(l.slot) == l {
		s.setSlot(l.slot, nil)
		s.free = append(s.free, l.slot)
	}
}

// closeSet closes the look set (the context closes; its links are shut).
func (c *Context) closeSet() {
	s := &c.tcp.set
	for !s.busy.CompareAndSwap(false, true) {
		time.Sleep(time.Microsecond) // a look is under way
	}
	s.mu.Lock()
	if s.live.Load() {
		s.live.Store(false)
		unix.Close(s.ep)
	}
	s.tried = true // (no set after the close)
	s.mu.Unlock()
	s.busy.Store(false)
}

// lookIdle looks at the readiness of all the context's links at once, when
// a round found idle ones and the last look's gap (tcpPollGap, after a look
// that found nothing) is over, and serves the idle ones that hold data; it
// returns the frames served. One caller looks at a time: the others go on.
func (c *Context) lookIdle() int {
	s := &c.tcp.set
	var now int64
	if next := s.next.Load(); next != 0 {
		if now = tcpClock(); now < next {
			return 0
		}
	}
	if !s.busy.CompareAndSwap(false, true) {
		return 0
	}
	if !s.live.Load() { // (closeSet closes it under busy)
		s.busy.Store(false)
		return 0
	}
	r, _, e := unix.RawSyscall6(unix.SYS_EPOLL_PWAIT, uintptr(s.ep), uintptr(unsafe.Pointer(&s.evs[0])), uintptr(len(s.evs)), 0, 0, 0)
	s.looks.Add(1)
	var ready [len(lookEvents{})]*tcpLink
	k := 0
	if e == 0 {
		for i := 0; i < int(r); i++ {
			l := s.slotAt(s.evs[i].Fd)
			// Only the idle ones: a hot link is read by its own rounds,
			// and one whose gap runs (a large frame trickling in) waits
			// for it; a held message, or a SEND that waits for a receive,
			// leaves data behind it that the link's own rounds take up.
			if l == nil || l.failed.Load() || l.ended.Load() || l.msgHeld.Load() || l.stalled.Load() || l.quiet.Load() <= tcpHotLooks {
				continue
			}
			if next := l.nextLook.Load(); next != 0 {
				if now == 0 {
					now = tcpClock()
				}
				if now < next {
					continue
				}
			}
			ready[k] = l
			k++
		}
	}
	next := int64(0)
	if k == 0 && tcpPollGap > 0 {
		if now == 0 {
			now = tcpClock()
		}
		next = now + int64(tcpPollGap)
	}
	if s.next.Load() != next {
		s.next.Store(next)
	}
	s.busy.Store(false)
	// (Read after the look is released: a slot reused meanwhile names
	// another link, whose read finds what it finds.)
	n := 0
	for _, l := range ready[:k] {
		n += l.pollRx()
		l.setReads.Add(1)
	}
	return n
}
