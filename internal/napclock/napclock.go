package napclock

import (
	"sync"
	"time"
)

// NapMin is the first nap: the helpers step aside this long once the
// application starts polling.
const NapMin = 500 * time.Microsecond

// NapMax bounds the naps however long the application keeps polling: it is
// how long at most a process whose application stops polling without blocking
// waits for its helpers.
const NapMax = 8 * time.Millisecond

// A Clock is a nap shared by the helpers that wait on it. The zero value is
// ready to use; Process returns the process's.
type Clock struct {
	mu    sync.Mutex
	ch    chan struct{} // closed when the running nap ends; nil: none runs
	next  time.Duration // the length of the next nap (0: NapMin)
	ended time.Time     // when the last nap ended
	naps  uint64        // naps started
	last  time.Duration // the length of the nap last started
}

// followOn is how soon after the last nap ended a new one must start to count
// as following it (a variable for the tests, which run on loaded hosts).
var followOn = NapMin

var process Clock

// Process returns the process's clock, shared by every NI and provider context
// in it.
func Process() *Clock { return &process }

// Nap returns a channel closed when the clock's running nap ends, starting one
// if none runs. A helper calls it when it finds the application polling; a nap
// that starts right after the last one ended (the helpers found the
// application still polling) is twice as long, up to NapMax.
func (c *Clock) Nap() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ch != nil {
		return c.ch
	}
	d := c.next
	if d == 0 || time.Since(c.ended) > followOn {
		// Not a nap that follows the last one: the helpers did other work in
		// between (the application had stopped).
		d = NapMin
	}
	c.next = min(2*d, NapMax)
	ch := make(chan struct{})
	c.ch = ch
	c.naps++
	c.last = d
	time.AfterFunc(d, func() {
		c.mu.Lock()
		close(ch)
		c.ch = nil
		c.ended = time.Now()
		c.mu.Unlock()
	})
	return ch
}

// Stopped says that the application stopped polling (a helper's nap ended to
// find it gone, or a caller is about to block): the next nap is NapMin.
func (c *Clock) Stopped() {
	c.mu.Lock()
	c.next = 0
	c.mu.Unlock()
}

// Naps returns how many naps the clock has started: one per wake of the
// helpers that share it.
func (c *Clock) Naps() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.naps
}
