package bootstrap

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"
)

// ServerConfig configures a bootstrap server.
type ServerConfig struct {
	// Size is the number of ranks in the job (≥ 1).
	Size int
	// Network is "tcp" (the default: 127.0.0.1, a free port) or "unix" (a socket
	// in a fresh private directory, removed by Close).
	Network string
	// JobKey is the secret the ranks must present; empty means a fresh random key.
	JobKey string
	// HelloTimeout bounds how long a new connection may take to authenticate;
	// zero means 10 s.
	HelloTimeout time.Duration
	// WriteTimeout bounds writing one reply to a rank; a rank that does not read
	// for that long is dropped (and lost). Zero means 10 s.
	WriteTimeout time.Duration
}

// AbortError says that a rank called Abort; it matches ErrAborted.
type AbortError struct {
	Rank int
	Code int
	Msg  string
}

// Error formats the abort as "rank R aborted with code C: msg".
func (e *AbortError) Error() string {
	return fmt.Sprintf("rank %d aborted with code %d: %s", e.Rank, e.Code, e.Msg)
}

// Unwrap returns ErrAborted.
func (e *AbortError) Unwrap() error { return ErrAborted }

// rank states on the server.
const (
	rsNew       = iota // not connected yet
	rsConnected        // authenticated connection open
	rsLeft             // called Close, or its process exited 0 without connecting
	rsLost             // connection dropped without Close, or its process failed
)

// Server is the launcher side of the ptlrun backend: it authenticates one
// connection per rank and serves put, fence, get, barrier and abort. Launch runs
// one; tests and tools that start ranks themselves use it directly.
type Server struct {
	size         int
	key          string
	addr         string
	sockDir      string
	helloTimeout time.Duration
	writeTimeout time.Duration
	ln           net.Listener

	mu        sync.Mutex
	conns     map[*serverConn]struct{}
	state     []int
	conn      []*serverConn // per rank, while connected
	pending   []map[string][]byte
	published []map[string][]byte
	collKind  uint8          // opFence or opBarrier while a collective is open, else 0
	waiting   map[int]uint32 // rank → request id of its collective call
	failure   error          // first failure: *AbortError or an ErrPeerLost detail
	failed    chan struct{}  // closed with the first failure
	departed  []int          // ranks that left or were lost, in that order
	closed    bool

	wg        sync.WaitGroup // connection goroutines
	closeOnce sync.Once
}

// NewServer listens for the ranks of a job of cfg.Size ranks. Call Serve to
// accept them and Close to stop.
func NewServer(cfg ServerConfig) (*Server, error) {
	if cfg.Size < 1 {
		return nil, opErr("server", -1, "", errDetail(ErrBadRank, "job size %d < 1", cfg.Size))
	}
	s := &Server{
		size:         cfg.Size,
		key:          cfg.JobKey,
		helloTimeout: cfg.HelloTimeout,
		writeTimeout: cfg.WriteTimeout,
		conns:        map[*serverConn]struct{}{},
		state:        make([]int, cfg.Size),
		conn:         make([]*serverConn, cfg.Size),
		pending:      make([]map[string][]byte, cfg.Size),
		published:    make([]map[string][]byte, cfg.Size),
		waiting:      map[int]uint32{},
		failed:       make(chan struct{}),
	}
	for r := range cfg.Size {
		s.pending[r] = map[string][]byte{}
		s.published[r] = map[string][]byte{}
	}
	if s.helloTimeout <= 0 {
		s.helloTimeout = 10 * time.Second
	}
	if s.writeTimeout <= 0 {
		s.writeTimeout = 10 * time.Second
	}
	if s.key == "" {
		var b [32]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, opErr("server", -1, "", err)
		}
		s.key = hex.EncodeToString(b[:])
	}
	var err error
	switch cfg.Network {
	case "", "tcp":
		s.ln, err = net.Listen("tcp", "127.0.0.1:0")
		if err == nil {
			s.addr = "tcp:" + s.ln.Addr().String()
		}
	case "tcp-public":
		// Ranks on other nodes: every interface, advertised at this node's address.
		var node net.IP
		if node, err = ResolveNodeAddr(); err != nil {
			return nil, err
		}
		s.ln, err = net.Listen("tcp", ":0")
		if err == nil {
			port := s.ln.Addr().(*net.TCPAddr).Port
			s.addr = "tcp:" + net.JoinHostPort(node.String(), strconv.Itoa(port))
		}
	case "unix":
		s.sockDir, err = os.MkdirTemp("", "ptlrun-")
		if err == nil {
			path := filepath.Join(s.sockDir, "bootstrap.sock")
			s.ln, err = net.Listen("unix", path)
			s.addr = "unix:" + path
			if err != nil {
				os.RemoveAll(s.sockDir)
			}
		}
	default:
		return nil, opErr("server", -1, "", errDetail(ErrNotSupported, "network %q (want tcp or unix)", cfg.Network))
	}
	if err != nil {
		return nil, opErr("listen", -1, "", err)
	}
	return s, nil
}

// Addr returns the address ranks dial, "tcp:HOST:PORT" or "unix:PATH".
func (s *Server) Addr() string { return s.addr }

// JobKey returns the job's secret key.
func (s *Server) JobKey() string { return s.key }

// Size returns the job size.
func (s *Server) Size() int { return s.size }

// ClientConfig returns what rank needs to Dial this server.
func (s *Server) ClientConfig(rank int) ClientConfig {
	return ClientConfig{Addr: s.addr, Rank: rank, Size: s.size, JobKey: s.key}
}

// Failed returns a channel closed when the job fails: a rank aborted or was lost.
func (s *Server) Failed() <-chan struct{} { return s.failed }

// Err returns the job's first failure (an *AbortError, or an error matching
// ErrPeerLost), or nil.
func (s *Server) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failure
}

// Departed returns the ranks that have left the job (Close, Abort, or exit 0
// without connecting) or were lost, in the order they went.
func (s *Server) Departed() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int(nil), s.departed...)
}

// Serve accepts and serves ranks until ctx ends or Close is called, then closes
// the server and returns nil (or the listener's unexpected error).
func (s *Server) Serve(ctx context.Context) error {
	stop := context.AfterFunc(ctx, func() { s.Close() })
	defer stop()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			s.mu.Lock()
			closed := s.closed
			s.mu.Unlock()
			s.Close()
			if closed {
				return nil
			}
			return opErr("accept", -1, "", err)
		}
		sc := &serverConn{c: c, rank: -1, timeout: s.writeTimeout}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			c.Close()
			continue
		}
		s.conns[sc] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go s.serveConn(sc)
	}
}

// Close stops accepting, drops every connection and waits for their goroutines.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		for sc := range s.conns {
			sc.c.Close()
		}
		s.mu.Unlock()
		s.ln.Close()
		s.wg.Wait()
		if s.sockDir != "" {
			os.RemoveAll(s.sockDir)
		}
	})
	return nil
}

// RankExited tells the server that rank's process ended, successfully or not.
// A failed rank is lost (collectives fail with ErrPeerLost); a rank that exits 0
// without ever connecting has left. Launch calls it.
func (s *Server) RankExited(rank int, success bool) {
	if rank < 0 || rank >= s.size {
		return
	}
	s.mu.Lock()
	var out []outMsg
	switch {
	case !success && s.state[rank] != rsLost:
		out = s.loseLocked(rank, "process of rank %d failed", rank)
	case success && s.state[rank] == rsNew:
		out = s.leaveLocked(rank)
	}
	s.mu.Unlock()
	send(out)
}

// outMsg is a reply to send after the server lock is released.
type outMsg struct {
	c *serverConn
	b []byte
}

func send(out []outMsg) {
	for _, m := range out {
		m.c.send(m.b)
	}
}

func reply(c *serverConn, id uint32, st uint8, msg string) outMsg {
	return outMsg{c, newFrame(opReply, id).u8(st).str(msg).bytes()}
}

// serverConn is one rank's connection; writes are serialized by mu.
type serverConn struct {
	c       net.Conn
	rank    int
	timeout time.Duration
	mu      sync.Mutex
}

// send writes one frame; a rank that cannot take it in time is dropped.
func (c *serverConn) send(b []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.c.SetWriteDeadline(time.Now().Add(c.timeout))
	if _, err := c.c.Write(b); err != nil {
		c.c.Close()
	}
}

// serveConn authenticates one connection, then serves its requests until it closes.
func (s *Server) serveConn(sc *serverConn) {
	defer s.wg.Done()
	defer func() {
		sc.c.Close()
		s.mu.Lock()
		delete(s.conns, sc)
		var out []outMsg
		if sc.rank >= 0 && s.conn[sc.rank] == sc {
			s.conn[sc.rank] = nil
			if s.state[sc.rank] == rsConnected {
				out = s.loseLocked(sc.rank, "rank %d closed its connection without Close", sc.rank)
			}
		}
		s.mu.Unlock()
		send(out)
	}()
	if !s.hello(sc) {
		return
	}
	for {
		op, id, payload, err := readFrame(sc.c)
		if err != nil {
			return
		}
		p := &parser{b: payload}
		s.mu.Lock()
		out, keep := s.handleLocked(sc, op, id, p)
		s.mu.Unlock()
		send(out)
		if !keep {
			return
		}
	}
}

// hello reads and checks the first frame; it reports whether the rank is in.
func (s *Server) hello(sc *serverConn) bool {
	sc.c.SetReadDeadline(time.Now().Add(s.helloTimeout))
	op, id, payload, err := readFrame(sc.c)
	if err != nil {
		return false
	}
	sc.c.SetReadDeadline(time.Time{})
	p := &parser{b: payload}
	rank, size, key := int(p.u32()), int(p.u32()), p.str()
	if op != opHello || p.done() != nil {
		send([]outMsg{reply(sc, id, stProtocol, "first message must be hello")})
		return false
	}
	if subtle.ConstantTimeCompare([]byte(key), []byte(s.key)) != 1 {
		send([]outMsg{reply(sc, id, stAuth, "wrong job key")})
		return false
	}
	if size != s.size || rank < 0 || rank >= s.size {
		send([]outMsg{reply(sc, id, stAuth, fmt.Sprintf("rank %d of %d does not fit this job of %d", rank, size, s.size))})
		return false
	}
	s.mu.Lock()
	if s.state[rank] != rsNew {
		s.mu.Unlock()
		send([]outMsg{reply(sc, id, stAuth, fmt.Sprintf("rank %d already connected or gone", rank))})
		return false
	}
	s.state[rank] = rsConnected
	s.conn[rank] = sc
	sc.rank = rank
	s.mu.Unlock()
	send([]outMsg{reply(sc, id, stOK, "")})
	return true
}

// handleLocked serves one request; keep is false when the connection must close.
func (s *Server) handleLocked(sc *serverConn, op uint8, id uint32, p *parser) (out []outMsg, keep bool) {
	r := sc.rank
	switch op {
	case opPut:
		key, val := p.str(), p.val()
		if p.done() != nil || checkPut(key, val) != nil {
			return nil, false
		}
		s.pending[r][key] = val
		return nil, true
	case opFence, opBarrier:
		if p.done() != nil {
			return nil, false
		}
		return s.arriveLocked(sc, op, id), true
	case opGet:
		from, key := int(p.u32()), p.str()
		if p.done() != nil {
			return nil, false
		}
		switch {
		case from < 0 || from >= s.size:
			return []outMsg{reply(sc, id, stBadRank, fmt.Sprintf("rank %d of a job of %d", from, s.size))}, true
		case checkKey(key) != nil:
			return []outMsg{reply(sc, id, stInvalidKey, "")}, true
		case s.failure != nil:
			return []outMsg{s.failReply(sc, id)}, true
		}
		v, ok := s.published[from][key]
		if !ok {
			return []outMsg{reply(sc, id, stNotFound, "")}, true
		}
		return []outMsg{{sc, newFrame(opReply, id).u8(stOK).val(v).bytes()}}, true
	case opCancel:
		target := p.u32()
		if p.done() != nil {
			return nil, false
		}
		if w, ok := s.waiting[r]; ok && w == target {
			delete(s.waiting, r)
			if len(s.waiting) == 0 {
				s.collKind = 0
			}
			return []outMsg{reply(sc, target, stCancelled, "")}, true
		}
		return nil, true // already answered
	case opAbort:
		code, msg := int(int32(p.u32())), p.str()
		if p.done() != nil {
			return nil, false
		}
		if len(msg) > maxMessage {
			msg = msg[:maxMessage]
		}
		if s.failure == nil {
			s.failure = &AbortError{Rank: r, Code: code, Msg: msg}
			close(s.failed)
		}
		out = s.failWaitingLocked()
		s.departed = append(s.departed, r)
		s.state[r] = rsLeft
		return append(out, reply(sc, id, stOK, "")), false
	case opFinalize:
		if p.done() != nil {
			return nil, false
		}
		out = s.leaveLocked(r)
		return append(out, reply(sc, id, stOK, "")), false
	default:
		return nil, false
	}
}

// arriveLocked records rank's arrival at a collective and completes it when all
// ranks are in.
func (s *Server) arriveLocked(sc *serverConn, op uint8, id uint32) []outMsg {
	r := sc.rank
	if s.failure != nil {
		return []outMsg{s.failReply(sc, id)}
	}
	for q, st := range s.state {
		if st == rsLeft {
			return []outMsg{reply(sc, id, stPeerLost, fmt.Sprintf("rank %d has left the job", q))}
		}
	}
	if _, ok := s.waiting[r]; ok {
		return []outMsg{reply(sc, id, stProtocol, "rank is already in a collective")}
	}
	if s.collKind != 0 && s.collKind != op {
		msg := fmt.Sprintf("rank %d called %s while others are in %s", r, opName(op), opName(s.collKind))
		out := []outMsg{reply(sc, id, stProtocol, msg)}
		for q, w := range s.waiting {
			out = append(out, reply(s.conn[q], w, stProtocol, msg))
		}
		clear(s.waiting)
		s.collKind = 0
		return out
	}
	s.collKind = op
	s.waiting[r] = id
	if len(s.waiting) < s.size {
		return nil
	}
	if op == opFence {
		for q := range s.size {
			for k, v := range s.pending[q] {
				s.published[q][k] = v
			}
			clear(s.pending[q])
		}
	}
	out := make([]outMsg, 0, s.size)
	for q, w := range s.waiting {
		out = append(out, reply(s.conn[q], w, stOK, ""))
	}
	clear(s.waiting)
	s.collKind = 0
	return out
}

func opName(op uint8) string {
	if op == opFence {
		return "Fence"
	}
	return "Barrier"
}

// failReply answers a request of a failed job.
func (s *Server) failReply(sc *serverConn, id uint32) outMsg {
	var ae *AbortError
	if errors.As(s.failure, &ae) {
		return reply(sc, id, stAborted, ae.Error())
	}
	return reply(sc, id, stPeerLost, s.failure.Error())
}

// failWaitingLocked fails every rank waiting in the open collective.
func (s *Server) failWaitingLocked() []outMsg {
	var out []outMsg
	for q, w := range s.waiting {
		if c := s.conn[q]; c != nil {
			out = append(out, s.failReply(c, w))
		}
	}
	clear(s.waiting)
	s.collKind = 0
	return out
}

// loseLocked marks rank lost, fails the job and every waiting collective.
func (s *Server) loseLocked(rank int, format string, args ...any) []outMsg {
	if s.state[rank] != rsLeft {
		s.departed = append(s.departed, rank)
	}
	s.state[rank] = rsLost
	delete(s.waiting, rank)
	if s.failure == nil {
		s.failure = errDetail(ErrPeerLost, format, args...)
		close(s.failed)
	}
	return s.failWaitingLocked()
}

// leaveLocked marks rank as cleanly gone; the open collective can no longer
// complete, so its waiters fail with ErrPeerLost.
func (s *Server) leaveLocked(rank int) []outMsg {
	if s.state[rank] != rsLeft && s.state[rank] != rsLost {
		s.departed = append(s.departed, rank)
	}
	s.state[rank] = rsLeft
	delete(s.waiting, rank)
	var out []outMsg
	for q, w := range s.waiting {
		if c := s.conn[q]; c != nil {
			out = append(out, reply(c, w, stPeerLost, fmt.Sprintf("rank %d has left the job", rank)))
		}
	}
	clear(s.waiting)
	s.collKind = 0
	return out
}
