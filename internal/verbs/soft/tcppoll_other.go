//go:build !linux

package soft

// tcpPoller is not built here: each link has a watcher goroutine that wakes the
// context's progress goroutine, and the context's progress reads the sockets.
type tcpPoller struct{}

// usePoller reports that no poller serves links here.
func (c *Context) usePoller() bool { return false }

// leavePoller does nothing here (no link is served by a poller).
func (c *Context) leavePoller() {}

// wakePoller does nothing here.
func (c *Context) wakePoller() {}

// unwatch does nothing here.
func (c *Context) unwatch(l *tcpLink) {}

// ackQueued does nothing here (answers are not delayed without a poller).
func (c *Context) ackQueued() {}

// rearmPoller does nothing here.
func (c *Context) rearmPoller() {}
