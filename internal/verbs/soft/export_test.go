package soft

import (
	"testing"
	"time"
)

// Test hooks: states the tests wait for or assert instead of sleeping.

// round runs one progress round over every connected queue pair of c, waiting for
// the progress lock (Context.progress skips the round when another goroutine holds
// it). When it returns, every queue pair has looked at its inbound ring.
func (c *Context) round() int {
	c.progMu.Lock()
	defer c.progMu.Unlock()
	n := 0
	for _, q := range *c.active.Load() {
		n += q.progress()
	}
	return n
}

// inboundWaiting reports whether a message from the peer is published in q's
// inbound ring and not consumed.
func (q *qp) inboundWaiting() bool {
	q.ctx.progMu.Lock() // the consumer position is read under it
	defer q.ctx.progMu.Unlock()
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.in != nil && q.in.ready()
}

// outstanding returns the number of send entries not yet completed and the state,
// bytes issued and length of the oldest.
func (q *qp) outstanding() (n int, state uint8, off, total uint64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	n = int(q.sqTail - q.sqHead)
	if n > 0 {
		e := &q.sq[q.sqHead%uint64(len(q.sq))]
		state, off, total = e.state, e.off, e.total
	}
	return
}

// peerMarkedDead reports whether checkPeers found q's peer process gone.
func (q *qp) peerMarkedDead() bool { return q.dead.Load() }

// sleepers returns the number of Wait calls past their spin phase, blocked on the
// queue's wake channel.
func (q *cq) sleepers() int { return int(q.waiters.Load()) }

// waitFor polls cond until it holds, failing the test after d.
func waitFor(tb testing.TB, what string, d time.Duration, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("still waiting after %v: %s", d, what)
		}
		time.Sleep(time.Millisecond)
	}
}
