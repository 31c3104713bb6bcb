package soft

import (
	"io"
	"net"
	"testing"
	"time"

	"github.com/goportals/goportals/internal/verbs/verbstest"
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
