package nic

import (
	"context"
	"crypto/hmac"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/goportals/goportals/internal/bootstrap"
)

// Between nodes the rendezvous of a pid is a TCP port of its node: the nid is the
// node's IPv4 address, and pid p listens at port rvPortBase+p (16384+p) on every interface.
// A request and its answer travel as one length-prefixed frame each, in the
// format of the node-local rendezvous, after a challenge and response in which
// both sides prove the key of their job (bootstrap.JobKey) without sending it: a
// request with another key, or from a process whose job key is not known yet, is
// refused with an empty answer frame, so a process of another job (or of none)
// cannot open a connection. A
// process without a job key (bootstrap.ErrNoJobKey) listens on the loopback
// interface only, answers only its own node, and asks no other node. PIDAny picks pids below rvPIDSpan, whose
// ports are valid; an explicit larger pid is reachable inside its node only.

const (
	// rvPortBase is the TCP port of pid 0's rendezvous: pids 0-16383 listen at
	// ports 16384-32767, below Linux's default range of ports for outgoing
	// connections (32768-60999), so that no connection of any process takes a
	// pid's port.
	rvPortBase = 16384
	// rvPIDSpan bounds the pids with a TCP rendezvous (and PIDAny's choices).
	rvPIDSpan = 16384
	// rvMaxFrame bounds a request or answer.
	rvMaxFrame = 8192
)

// rvPort returns pid's rendezvous port, or false when the pid has none.
func rvPort(pid PID) (int, bool) {
	if pid >= rvPIDSpan {
		return 0, false
	}
	return rvPortBase + int(pid), true
}

// tcpRendezvous is a claim's listener for other nodes.
type tcpRendezvous struct {
	ln net.Listener
	wg sync.WaitGroup
}

// listenTCP opens pid's TCP rendezvous; errPIDInUse when its port is taken.
func listenTCP(pid PID) (*tcpRendezvous, error) {
	port, ok := rvPort(pid)
	if !ok {
		return nil, nil
	}
	host := "" // every interface
	if noJobKey() {
		host = "127.0.0.1" // node-local only: no key, no stranger
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return nil, fmt.Errorf("%w: port %d: %v", errPIDInUse, port, err)
	}
	return &tcpRendezvous{ln: ln}, nil
}

// serve answers requests from other nodes for p until the listener closes. A
// remote connection request tolerates a goroutine's scheduling delay.
func (t *tcpRendezvous) serve(p *Process) {
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		for {
			c, err := t.ln.Accept()
			if err != nil {
				return
			}
			t.wg.Add(1)
			go func() {
				defer t.wg.Done()
				defer c.Close()
				c.SetDeadline(time.Now().Add(10 * time.Second))
				req, ok := rvAccept(c)
				if !ok {
					return
				}
				var rep connectReply
				if r, ok := decodeRequest(req); ok {
					rep = p.serve(&r)
				} else {
					rep = connectReply{status: connBad}
				}
				writeFrame(c, rep.encode())
			}()
		}
	}()
}

// noJobKey reports whether this process has no job key: its rendezvous then
// listens on the loopback interface only and answers its own node only.
func noJobKey() bool {
	key, known := bootstrap.JobKey()
	return known && len(key) == 0
}

// fromLoopback reports whether c comes from a loopback address.
func fromLoopback(c net.Conn) bool {
	a, ok := c.RemoteAddr().(*net.TCPAddr)
	return ok && a.IP.IsLoopback()
}

// The key exchange. Neither side sends the job key: each proves it holds it by
// an HMAC (bootstrap.ProveKey) over both sides' random challenges, under a label
// of its own. The requester sends its challenge; the rendezvous answers with its
// challenge and its proof (or an empty frame: its key is not known yet, or it
// answers its own node only); the requester checks that proof before it sends
// anything else, then sends its proof, which also covers the request, and the
// request; the rendezvous checks it and answers (an empty frame: refused).
const (
	rvProofServer    = "goportals rendezvous: server"
	rvProofRequester = "goportals rendezvous: requester"
)

// errRefused: the rendezvous refused the request (another job's key, or a key
// not known yet).
var errRefused = errors.New("refused this process's job key (another job's process, or its key is not known yet)")

// rvHandshake runs the requester's side over c with key and req; it returns the
// rendezvous's answer.
func rvHandshake(c net.Conn, key, req []byte) ([]byte, error) {
	mine := bootstrap.Challenge()
	if err := writeFrame(c, mine); err != nil {
		return nil, err
	}
	b, err := readFrame(c)
	if err != nil {
		return nil, fmt.Errorf("did not answer: %w", err)
	}
	if len(b) == 0 {
		return nil, errRefused
	}
	if len(b) != 2*bootstrap.ChallengeLen {
		return nil, fmt.Errorf("malformed challenge of %d bytes", len(b))
	}
	theirs, proof := b[:bootstrap.ChallengeLen], b[bootstrap.ChallengeLen:]
	if !hmac.Equal(proof, bootstrap.ProveKey(key, rvProofServer, mine, theirs)) {
		return nil, errors.New("the rendezvous did not prove this process's job key (another job's process, or an impostor)")
	}
	if err := writeFrames(c, bootstrap.ProveKey(key, rvProofRequester, theirs, mine, req), req); err != nil {
		return nil, err
	}
	rep, err := readFrame(c)
	if err != nil {
		return nil, fmt.Errorf("did not answer: %w", err)
	}
	if len(rep) == 0 {
		return nil, errRefused
	}
	return rep, nil
}

// rvAccept runs the rendezvous's side over c; it returns the request once the
// requester proved the job key.
func rvAccept(c net.Conn) ([]byte, bool) {
	theirs, err := readFrame(c)
	if err != nil || len(theirs) != bootstrap.ChallengeLen {
		return nil, false
	}
	key, known := bootstrap.JobKey()
	if !known || (len(key) == 0 && !fromLoopback(c)) {
		writeFrame(c, nil)
		return nil, false
	}
	mine := bootstrap.Challenge()
	if err := writeFrame(c, append(mine, bootstrap.ProveKey(key, rvProofServer, theirs, mine)...)); err != nil {
		return nil, false
	}
	proof, err := readFrame(c)
	if err != nil {
		return nil, false
	}
	req, err := readFrame(c)
	if err != nil {
		return nil, false
	}
	if !hmac.Equal(proof, bootstrap.ProveKey(key, rvProofRequester, mine, theirs, req)) {
		writeFrame(c, nil)
		return nil, false
	}
	return req, true
}

// close stops the listener and waits for its goroutines.
func (t *tcpRendezvous) close() {
	if t == nil {
		return
	}
	t.ln.Close()
	t.wg.Wait()
}

func readFrame(r io.Reader) ([]byte, error) {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return nil, err
	}
	size := binary.LittleEndian.Uint32(n[:])
	if size > rvMaxFrame {
		return nil, fmt.Errorf("rendezvous frame of %d bytes", size)
	}
	b := make([]byte, size)
	_, err := io.ReadFull(r, b)
	return b, err
}

// writeFrames writes frames in one write.
func writeFrames(w io.Writer, frames ...[]byte) error {
	var f []byte
	for _, b := range frames {
		f = binary.LittleEndian.AppendUint32(f, uint32(len(b)))
		f = append(f, b...)
	}
	_, err := w.Write(f)
	return err
}

func writeFrame(w io.Writer, b []byte) error {
	f := make([]byte, 4+len(b))
	binary.LittleEndian.PutUint32(f, uint32(len(b)))
	copy(f[4:], b)
	_, err := w.Write(f)
	return err
}

// nidIP returns the IPv4 address a nid names.
func nidIP(nid NID) net.IP {
	return net.IPv4(byte(nid>>24), byte(nid>>16), byte(nid>>8), byte(nid)).To4()
}

// exchangeRemote sends req to the process holding id's pid on id's node and
// returns its answer, driving this NI's progress while it waits.
func (ni *NI) exchangeRemote(ctx context.Context, id ProcessID, req *connectRequest) (connectReply, error) {
	port, ok := rvPort(id.PID)
	if !ok {
		return connectReply{}, fmt.Errorf("%w: pid %d on nid %#x has no rendezvous between nodes (pids below %d do)",
			errUnreachable, id.PID, uint32(id.NID), rvPIDSpan)
	}
	type result struct {
		rep connectReply
		err error
	}
	key, known := bootstrap.JobKey()
	if !known {
		return connectReply{}, fmt.Errorf("%w: nid %#x pid %d: this process's job key is not known yet (its job has not fenced)",
			errUnreachable, uint32(id.NID), id.PID)
	}
	if len(key) == 0 {
		return connectReply{}, fmt.Errorf("%w: nid %#x pid %d: %w", errUnreachable, uint32(id.NID), id.PID, bootstrap.ErrNoJobKey)
	}
	done := make(chan result, 1)
	go func() {
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", net.JoinHostPort(nidIP(id.NID).String(), strconv.Itoa(port)))
		if err != nil {
			done <- result{err: fmt.Errorf("%w: nid %#x pid %d: %w", errUnreachable, uint32(id.NID), id.PID, err)}
			return
		}
		defer c.Close()
		if dl, ok := ctx.Deadline(); ok {
			c.SetDeadline(dl)
		}
		b, err := rvHandshake(c, key, req.encode())
		if err != nil {
			done <- result{err: fmt.Errorf("%w: nid %#x pid %d: %w", errUnreachable, uint32(id.NID), id.PID, err)}
			return
		}
		rep, ok := decodeReply(b)
		if !ok {
			done <- result{err: fmt.Errorf("%w: malformed answer from nid %#x pid %d", errUnreachable, uint32(id.NID), id.PID)}
			return
		}
		done <- result{rep: rep}
	}()
	// The target may be connecting to us at the same time: keep serving.
	for i := 0; ; i++ {
		select {
		case r := <-done:
			return r.rep, r.err
		default:
		}
		if i > 1000 {
			select {
			case r := <-done:
				return r.rep, r.err
			case <-time.After(50 * time.Microsecond):
			}
		}
		ni.yieldConnect(i)
	}
}
