package soft

import (
	"sync"
	"sync/atomic"
)

// lookSet lets a caller's poll round look at all of a context's idle links
// with one system call (Linux: an epoll set, level-triggered, that holds the
// sockets of the idle links the poller serves, each named by its link's slot in
// tab; a link's socket joins it when the link turns idle). A link that received a
// moment ago is read by every round, but one idle for a while is only looked
// at, and a look per idle link per round made a rank's connections to quiet
// peers lengthen every round that waits for the busy one: with tens of peers,
// rounds of tens of system calls. The set's look costs the same for one idle
// link or a thousand, and reads only the links it finds readable.
type lookSet struct {
	mu sync.Mutex // guards the opening and closing, free and tab's changes
	// tried: the set was asked for (opened, or refused: then none). ep is
	// the epoll descriptor while live (any number, 0 too: a program may
	// have closed its standard input); live turns false when it closes.
	tried bool
	live  atomic.Bool
	ep    int
	tab   atomic.Pointer[[]*tcpLink]
	free  []int32
	// busy: a caller is looking (one look serves them all; under it the
	// look uses evs). next: no look before this tcpClock (0: no gap).
	busy  atomic.Bool
	next  atomic.Int64
	evs   lookEvents
	looks atomic.Uint64 // looks made (for the tests)
}

// slotAt returns the link in slot id (nil: none).
func (s *lookSet) slotAt(id int32) *tcpLink {
	tab := s.tab.Load()
	if tab == nil || id < 0 || int(id) >= len(*tab) {
		return nil
	}
	return (*tab)[id]
}

// setSlot stores l in slot id (s.mu held), copying the table.
func (s *lookSet) setSlot(id int32, l *tcpLink) {
	var old []*tcpLink
	if p := s.tab.Load(); p != nil {
		old = *p
	}
	n := make([]*tcpLink, max(len(old), int(id)+1))
	copy(n, old)
	n[id] = l
	s.tab.Store(&n)
}

// takeSlot returns a free slot (s.mu held).
func (s *lookSet) takeSlot() int32 {
	if k := len(s.free); k > 0 {
		id := s.free[k-1]
		s.free = s.free[:k-1]
		return id
	}
	if p := s.tab.Load(); p != nil {
		return int32(len(*p))
	}
	return 0
}
