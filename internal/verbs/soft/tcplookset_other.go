//go:build !linux

package soft

// lookEvents is empty where there is no look set.
type lookEvents struct{}

// setAdd leaves the link out: without a set, each idle link is looked at alone.
func (c *Context) setAdd(l *tcpLink) {}

// setArm reports that the link is not in a set: it is looked at alone.
func (c *Context) setArm(l *tcpLink) bool { return false }

// setDisarm does nothing: no link is in a set.
func (c *Context) setDisarm(l *tcpLink) {}

// setRemove does nothing: no link is in a set.
func (c *Context) setRemove(l *tcpLink) {}

// closeSet does nothing: there is no set.
func (c *Context) closeSet() {}

// lookIdle finds nothing: no link is in a set.
func (c *Context) lookIdle() int { return 0 }
