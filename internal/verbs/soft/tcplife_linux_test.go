package soft

import (
	"io"
	"net"
	"testing"
	"time"

	"github.com/goportals/goportals/internal/verbs/verbstest"
	"golang.org/x/sys/unix"
)

// TestTCPStartOnShutLinkLeaksNothing: a connection that arrives for a link
// already shut (its queue pair destroyed while the hello was being answered)
// is closed, and the link is neither listed in the context nor counted by the
// poller, which would then never end.
func TestTCPStartOnShutLinkLeaksNothing(t *testing.T) {
	t.Setenv(EnvPath, "tcp")
	p := verbstest.NewPair(t, softEnv)
	q := p.A.QP.(*qp)
	c := q.ctx
	// The pair's own links are up (they start in the background: under load
	// one started after served was read below).
	tcpPingPong(t, p, 1)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			close(accepted)
			return
		}
		accepted <- conn
	}()
	dialed, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer dialed.Close()
	conn := <-accepted
	if conn == nil {
		t.Fatal("no connection accepted")
	}
	c.tcp.pmu.Lock()
	served := c.tcp.served
	c.tcp.pmu.Unlock()

	l := &tcpLink{q: q, pending: map[uint64]*tcpPending{}, done: make(chan struct{})}
	l.shut() // the queue pair's destroy got there first
	q.mu.Lock()
	l.start(conn)
	q.mu.Unlock()

	c.tcp.pmu.Lock()
	after := c.tcp.served
	c.tcp.pmu.Unlock()
	if after != served {
		t.Errorf("the poller serves %d links after starting a shut one, want %d", after, served)
	}
	if ls := c.links.Load(); ls != nil {
		for _, x := range *ls {
			if x == l {
				t.Errorf("the shut link is listed in the context")
			}
		}
	}
	// The peer sees the stream end: no descriptor of it is left open here.
	dialed.(*net.TCPConn).SetReadDeadline(time.Now().Add(hangGuard))
	var b [1]byte
	if n, err := dialed.Read(b[:]); err != io.EOF {
		t.Errorf("the stream of a shut link stays open (read: %d bytes, %v)", n, err)
	}
}

// TestTCPCloseEndsPoller: closing the contexts shuts their links, which closes
// the sockets' descriptors and ends each context's poller (its epoll and
// eventfd descriptors are closed before it records that it ended).
func TestTCPCloseEndsPoller(t *testing.T) {
	t.Setenv(EnvPath, "tcp")
	p := verbstest.NewPair(t, softEnv)
	la, lb := tcpPingPong(t, p, 1)
	type held struct {
		fd  int
		ino uint64
	}
	var fds []held
	for _, l := range []*tcpLink{la, lb} {
		l.txMu.Lock()
		fd := l.fd
		l.unlockTx()
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			t.Fatal(err)
		}
		fds = append(fds, held{fd, st.Ino})
	}
	ctxs := []*Context{la.q.ctx, lb.q.ctx}
	for _, c := range ctxs {
		if currentPoller(c) == nil {
			t.Fatal("no poller serves the context's link")
		}
	}
	for _, s := range []*verbstest.Side{p.A, p.B} {
		if err := s.Ctx.Close(); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(hangGuard)
	for _, c := range ctxs {
		for {
			if currentPoller(c) == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("a closed context's poller still runs")
			}
			time.Sleep(time.Millisecond)
		}
	}
	for _, h := range fds {
		var st unix.Stat_t
		if err := unix.Fstat(h.fd, &st); err == nil && st.Ino == h.ino {
			t.Errorf("descriptor %d (inode %d) is still open after the contexts closed", h.fd, h.ino)
		}
	}
}
