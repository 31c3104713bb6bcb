package soft

import (
	"bytes"
	"crypto/hmac"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/goportals/goportals/internal/bootstrap"

	"github.com/goportals/goportals/internal/envknob"
	"github.com/goportals/goportals/internal/verbs"
)

// EnvPath names the variable that forces the path between queue pairs:
// PTL_SOFT_PATH=tcp joins any two contexts over TCP, even two processes of one
// node or two contexts of one process (for tests and measurements; a context's
// queue pairs joined to each other stay in memory); unset or "auto" uses shared
// memory inside a node and TCP between nodes.
const EnvPath = string(envknob.SoftPath)

// forceTCP reports whether PTL_SOFT_PATH asks for TCP everywhere.
func forceTCP() (bool, error) {
	switch v := envknob.Get(envknob.SoftPath); v {
	case "", "auto", "shm":
		return false, nil
	case "tcp":
		return true, nil
	default:
		return false, fmt.Errorf("%s=%q: want auto or tcp", EnvPath, v)
	}
}

// netnsID identifies this process's network namespace: a node is a kernel and a
// network namespace, so two processes of one kernel in different namespaces talk
// over TCP.
var netnsID = sync.OnceValue(func() uint64 {
	var st syscall.Stat_t
	if err := syscall.Stat("/proc/self/ns/net", &st); err != nil {
		return 0
	}
	return st.Ino
})

// tcpState is a context's TCP side: the listener peers dial, and connections that
// arrived before their queue pair's Connect.
type tcpState struct {
	once  sync.Once
	ln    net.Listener
	ip    [16]byte
	port  uint16
	mu    sync.Mutex
	early map[uint32]earlyConn
	err   error // why there is no listener

	// pmu guards the poller that reads the links' sockets (tcppoll_linux.go):
	// served counts the links handed to it and not yet shut; it ends when none
	// is left. noPoller: the kernel refused one; links are watched instead.
	pmu      sync.Mutex
	poller   *tcpPoller
	served   int
	noPoller bool

	// polled: a caller polled the context (markPolled) since the poller last
	// looked; the context goroutine's own rounds do not count, so that they
	// never keep the poller napping. acks counts the links whose answers wait
	// to ride with a request.
	polled atomic.Bool
	acks   atomic.Int32
	// asleep: the poller waits in the kernel. rearm: a link's held messages
	// were handed out: the poller watches its socket again.
	asleep atomic.Bool
	rearm  atomic.Bool
	// hotPauses counts the callers' rounds that paused after an empty read
	// of a hot link (tcpHotPause).
	hotPauses atomic.Uint64
	// set: the look set of the idle links (tcplookset.go).
	set lookSet
	// watchChanges counts the poller's changes to its set (for the tests).
	watchChanges atomic.Uint64
	// rounds counts the rounds over the links while countRounds is set.
	rounds atomic.Uint64
}

type earlyConn struct {
	conn  net.Conn
	qpn   uint32
	nonce uint64
}

// listen opens the context's listener once; peers on other nodes dial it.
func (c *Context) listen() {
	c.tcp.once.Do(func() {
		ip, err := bootstrap.ResolveNodeAddr()
		if err != nil {
			c.tcp.err = err
			return
		}
		if noKey() {
			ip = net.IPv4(127, 0, 0, 1) // node-local only: no key, no stranger
		}
		ln, err := net.Listen("tcp", net.JoinHostPort(ip.String(), "0"))
		if err != nil {
			c.tcp.err = err
			return
		}
		c.tcp.ln = ln
		copy(c.tcp.ip[:], ip.To16())
		c.tcp.port = uint16(ln.Addr().(*net.TCPAddr).Port)
		c.tcp.early = map[uint32]earlyConn{}
		c.wg.Add(1)
		go c.acceptLoop(ln)
	})
}

const (
	helloMagic = 0x47505443 // "GPTC"
	helloLen   = 4 + 4 + 8 + 4 + 8 + 2
	helloOK    = 0
	helloNoQP  = 1
	helloKey   = 2
)

func (c *Context) acceptLoop(ln net.Listener) {
	defer c.wg.Done()
	for {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		go c.hello(conn)
	}
}

// The hello proves the job key both ways without sending it: the listener opens
// with a random challenge; the dialer sends the hello header (whose length field
// is the challenge length), its own challenge and an HMAC (bootstrap.ProveKey)
// under the key of both challenges and the header; the listener checks it and
// answers one byte, followed after helloOK by its own proof, which the dialer
// checks before it sends anything else.
const (
	helloProofDialer   = "goportals soft hello: dialer"
	helloProofListener = "goportals soft hello: listener"
)

// hello reads a dialer's greeting, checks the job key and the target queue pair,
// and hands the connection over.
func (c *Context) hello(conn net.Conn) {
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	mine := bootstrap.Challenge()
	if _, err := conn.Write(mine); err != nil {
		conn.Close()
		return
	}
	var h [helloLen]byte
	if _, err := io.ReadFull(conn, h[:]); err != nil || binary.LittleEndian.Uint32(h[0:]) != helloMagic ||
		binary.LittleEndian.Uint16(h[28:]) != bootstrap.ChallengeLen {
		conn.Close()
		return
	}
	dst := binary.LittleEndian.Uint32(h[4:])
	dstNonce := binary.LittleEndian.Uint64(h[8:])
	src := binary.LittleEndian.Uint32(h[16:])
	srcNonce := binary.LittleEndian.Uint64(h[20:])
	var cp [2 * bootstrap.ChallengeLen]byte
	if _, err := io.ReadFull(conn, cp[:]); err != nil {
		conn.Close()
		return
	}
	theirs, proof := cp[:bootstrap.ChallengeLen], cp[bootstrap.ChallengeLen:]
	want, known := currentKey()
	if !known || !hmac.Equal(proof, bootstrap.ProveKey(want, helloProofDialer, mine, theirs, h[:])) || (len(want) == 0 && !fromLoopback(conn)) {
		conn.Write([]byte{helloKey})
		conn.Close()
		return
	}
	okAnswer := append([]byte{helloOK}, bootstrap.ProveKey(want, helloProofListener, theirs, mine)...)
	var q *qp
	if dstNonce == c.nonce {
		c.mu.Lock()
		for x := range c.qps {
			if x.num == dst {
				q = x
				break
			}
		}
		c.mu.Unlock()
	}
	if q == nil {
		conn.Write([]byte{helloNoQP})
		conn.Close()
		return
	}
	conn.SetDeadline(time.Time{})
	q.mu.Lock()
	defer q.mu.Unlock()
	switch {
	case q.link != nil && q.link.conn == nil && !q.link.failed.Load() && q.link.peerQPN == src && q.link.peerNonce == srcNonce:
		conn.Write(okAnswer)
		q.link.start(conn)
	case q.State() == verbs.QPInit:
		c.tcp.mu.Lock()
		if c.tcp.early == nil { // the context is closing
			c.tcp.mu.Unlock()
			conn.Close()
			return
		}
		if old, ok := c.tcp.early[dst]; ok {
			old.conn.Close()
		}
		c.tcp.early[dst] = earlyConn{conn: conn, qpn: src, nonce: srcNonce}
		c.tcp.mu.Unlock()
		conn.Write(okAnswer)
		// A queue pair that never connects closes the stream: the dialer's work
		// fails instead of waiting for answers that never come.
		time.AfterFunc(tcpConnectTimeout, func() { c.dropEarly(dst, conn) })
	default:
		conn.Write([]byte{helloNoQP})
		conn.Close()
	}
}

// dropEarly closes conn if it still waits for queue pair dst's Connect.
func (c *Context) dropEarly(dst uint32, conn net.Conn) {
	c.tcp.mu.Lock()
	e, ok := c.tcp.early[dst]
	if ok && e.conn == conn {
		delete(c.tcp.early, dst)
	}
	c.tcp.mu.Unlock()
	if ok && e.conn == conn {
		conn.Close()
	}
}

// dials reports whether this side opens the connection: the lower endpoint does.
func dials(ip [16]byte, port uint16, qpn uint32, rip [16]byte, rport uint16, rqpn uint32) bool {
	if c := bytes.Compare(ip[:], rip[:]); c != 0 {
		return c < 0
	}
	if port != rport {
		return port < rport
	}
	return qpn < rqpn
}

// connectTCP joins the queue pair to a on another node (q.mu held).
func (q *qp) connectTCP(a address) error {
	c := q.ctx
	if c.tcp.ln == nil || a.tcpPort == 0 {
		why := "the peer has none"
		if c.tcp.ln == nil {
			why = "this process has none"
			if c.tcp.err != nil {
				why += ": " + c.tcp.err.Error()
			}
		}
		return verbs.Errorf("connect", verbs.ErrUnreachable, fmt.Errorf("no TCP endpoint (%s)", why))
	}
	if noKey() && (a.boot != bootID() || a.netns != netnsID()) {
		return verbs.Errorf("connect", verbs.ErrUnreachable, bootstrap.ErrNoJobKey)
	}
	l := &tcpLink{q: q, pending: map[uint64]*tcpPending{}, done: make(chan struct{}), peerQPN: a.qpn, peerNonce: a.nonce}
	if dials(c.tcp.ip, c.tcp.port, q.num, a.tcpIP, a.tcpPort, a.qpn) {
		conn, err := dialPeer(a, q.num, c.nonce)
		if err != nil {
			return err
		}
		q.link = l
		l.start(conn)
	} else {
		q.link = l
		c.tcp.mu.Lock()
		e, ok := c.tcp.early[q.num]
		delete(c.tcp.early, q.num)
		c.tcp.mu.Unlock()
		if ok && e.qpn == a.qpn && e.nonce == a.nonce {
			l.start(e.conn)
		} else {
			if ok {
				e.conn.Close()
			}
			time.AfterFunc(tcpConnectTimeout, l.connectDeadline)
		}
	}
	q.state.Store(uint32(verbs.QPReady))
	return nil
}

// noKey reports whether this process has no job key: it then listens on the
// loopback interface only and accepts connections from its own node only.
func noKey() bool {
	key, known := currentKey()
	return known && len(key) == 0
}

// fromLoopback reports whether conn comes from a loopback address.
func fromLoopback(conn net.Conn) bool {
	a, ok := conn.RemoteAddr().(*net.TCPAddr)
	return ok && a.IP.IsLoopback()
}

// connectDeadline fails the link if the peer has not connected yet: its work
// completes with errors instead of waiting forever.
func (l *tcpLink) connectDeadline() {
	q := l.q
	q.mu.Lock()
	l.txMu.Lock()
	late := l.conn == nil && !l.failed.Load()
	l.unlockTx()
	if late {
		l.failed.Store(true) // refuses a hello from now on (hello holds q.mu)
	}
	q.mu.Unlock()
	if late {
		l.broken(fmt.Errorf("the peer did not connect within %v", tcpConnectTimeout))
	}
}

// dialPeer opens the stream to a's listener and greets it.
func dialPeer(a address, qpn uint32, nonce uint64) (net.Conn, error) {
	key, known := currentKey()
	if !known {
		return nil, verbs.Errorf("connect", verbs.ErrUnreachable, errors.New("the job key is not known yet (the job has not fenced)"))
	}
	ip := net.IP(a.tcpIP[:])
	conn, err := net.DialTimeout("tcp", net.JoinHostPort(ip.String(), fmt.Sprint(a.tcpPort)), 10*time.Second)
	if err != nil {
		return nil, verbs.Errorf("connect", verbs.ErrUnreachable, err)
	}
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	theirs := make([]byte, bootstrap.ChallengeLen)
	if _, err := io.ReadFull(conn, theirs); err != nil {
		conn.Close()
		return nil, verbs.Errorf("connect", verbs.ErrUnreachable, err)
	}
	h := make([]byte, helloLen, helloLen+2*bootstrap.ChallengeLen)
	binary.LittleEndian.PutUint32(h[0:], helloMagic)
	binary.LittleEndian.PutUint32(h[4:], a.qpn)
	binary.LittleEndian.PutUint64(h[8:], a.nonce)
	binary.LittleEndian.PutUint32(h[16:], qpn)
	binary.LittleEndian.PutUint64(h[20:], nonce)
	binary.LittleEndian.PutUint16(h[28:], bootstrap.ChallengeLen)
	mine := bootstrap.Challenge()
	proof := bootstrap.ProveKey(key, helloProofDialer, theirs, mine, h)
	h = append(append(h, mine...), proof...)
	var ans [1 + bootstrap.ChallengeLen]byte
	if _, err := conn.Write(h); err == nil {
		_, err = io.ReadFull(conn, ans[:1])
		if err == nil && ans[0] == helloOK {
			_, err = io.ReadFull(conn, ans[1:])
		}
		if err != nil {
			conn.Close()
			return nil, verbs.Errorf("connect", verbs.ErrUnreachable, err)
		}
	} else {
		conn.Close()
		return nil, verbs.Errorf("connect", verbs.ErrUnreachable, err)
	}
	conn.SetDeadline(time.Time{})
	switch ans[0] {
	case helloOK:
		if !hmac.Equal(ans[1:], bootstrap.ProveKey(key, helloProofListener, mine, theirs)) {
			conn.Close()
			return nil, verbs.Errorf("connect", verbs.ErrUnreachable, errors.New("the peer did not prove the job key (another job's process, or an impostor)"))
		}
		return conn, nil
	case helloKey:
		conn.Close()
		return nil, verbs.Errorf("connect", verbs.ErrUnreachable, errors.New("peer refused the job key"))
	default:
		conn.Close()
		return nil, verbs.Errorf("connect", verbs.ErrUnreachable, fmt.Errorf("queue pair %d no longer exists", a.qpn))
	}
}

// Path says how the queue pair reaches its peer: "shm" (shared memory and
// cross-memory attach inside a node), "tcp" (a TCP stream), or "" before Connect.
func (q *qp) Path() string {
	q.mu.Lock()
	defer q.mu.Unlock()
	switch {
	case q.link != nil:
		return "tcp"
	case q.peer != nil:
		return "shm"
	}
	return ""
}
