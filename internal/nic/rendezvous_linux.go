package nic

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// The node-wide rendezvous on Linux: the pid claim is a listening SOCK_SEQPACKET
// unix socket in the abstract namespace, named after the pid. Abstract names belong
// to the network namespace, so the rendezvous reaches exactly the processes of the
// same node (a kernel and a network namespace). The kernel refuses a second bind of
// a name and drops it when its socket closes or its process dies: no stale claim
// and no file is ever left behind. One request and one answer travel on each
// accepted connection, each in one packet.

// rendezvousName is the abstract socket name of a pid.
func rendezvousName(pid PID) string { return fmt.Sprintf("@goportals.pid%d", pid) }

// listener is the process's rendezvous socket. Its goroutine blocks in poll(2) on
// the socket and a wake pipe (not in the runtime's poller: it must wake however
// busy the process's goroutines are); progress accepts without blocking.
type listener struct {
	mu      sync.Mutex // a leaf lock: guards fd against Close
	idle    sync.Cond  // signaled when the goroutine leaves poll(2)
	fd      int
	closed  bool
	inPoll  bool // the goroutine is in poll(2) on fd
	wakeR   int  // the wake pipe: Close writes to it
	wakeW   int
	pending []pendingConn // accepted connections whose request has not arrived yet (under the claim's lmu)
}

// pendingConn is an accepted connection waiting for its request.
type pendingConn struct {
	fd       int
	deadline time.Time
}

// listenPID binds and listens on pid's rendezvous name: errPIDInUse when another
// socket holds it.
func listenPID(pid PID) (*listener, error) {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("rendezvous socket: %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrUnix{Name: rendezvousName(pid)}); err != nil {
		unix.Close(fd)
		if errors.Is(err, unix.EADDRINUSE) {
			return nil, errPIDInUse
		}
		return nil, fmt.Errorf("claiming pid %d on this node: %w", pid, err)
	}
	if err := unix.Listen(fd, 128); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("rendezvous listen: %w", err)
	}
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("rendezvous wake pipe: %w", err)
	}
	l := &listener{fd: fd, wakeR: p[0], wakeW: p[1]}
	l.idle.L = &l.mu
	return l, nil
}

// Close closes the socket (the name is free again) and wakes the listener's
// goroutine, which then ends. Without a goroutine (see testNoHelpers) it also
// closes the wake pipe.
func (l *listener) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	unix.Write(l.wakeW, []byte{1})
	// poll(2) holds the socket until it returns: close it once the goroutine is out,
	// so the name is free when Close returns.
	for l.inPoll {
		l.idle.Wait()
	}
	err := unix.Close(l.fd)
	if testNoHelpers.Load() {
		unix.Close(l.wakeR)
		unix.Close(l.wakeW)
	}
	return err
}

// dropPending closes the connections still waiting for their request and the wake
// pipe. Called by the goroutine as it ends, with the claim's lmu held.
func (l *listener) dropPending() {
	for _, pc := range l.pending {
		unix.Close(pc.fd)
	}
	l.pending = nil
	l.mu.Lock()
	unix.Close(l.wakeR)
	unix.Close(l.wakeW)
	l.wakeR, l.wakeW = -1, -1
	l.mu.Unlock()
}

// wake wakes the goroutine, unless the socket is closed (the pipe may be gone).
func (l *listener) wake() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.closed {
		unix.Write(l.wakeW, []byte{1})
	}
}

// accept accepts every connection waiting, without blocking.
func (l *listener) accept() []int {
	l.mu.Lock()
	defer l.mu.Unlock()
	var fds []int
	for !l.closed {
		// accept4 without the peer's address: unix.Accept4 allocates one per
		// call, also when nothing waits, and this runs every few progress rounds.
		nfd, _, errno := unix.Syscall6(unix.SYS_ACCEPT4, uintptr(l.fd), 0, 0,
			unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0, 0)
		if errno == unix.EINTR {
			continue
		}
		if errno != 0 {
			break
		}
		fds = append(fds, int(nfd))
	}
	return fds
}

// poll accepts and serves what waits, without blocking. Called with the claim's
// lmu held.
func (l *listener) poll(p *Process) {
	fds := l.accept()
	now := time.Now()
	for _, fd := range fds {
		l.pending = append(l.pending, pendingConn{fd: fd, deadline: now.Add(5 * time.Second)})
	}
	if len(l.pending) == 0 {
		return
	}
	defer func(before int) {
		if len(l.pending) > before {
			l.wake() // the goroutine must watch the new ones
		}
	}(len(l.pending) - len(fds))
	keep := l.pending[:0]
	var buf [8192]byte
	for _, pc := range l.pending {
		n, err := unix.Read(pc.fd, buf[:])
		if err == unix.EAGAIN && now.Before(pc.deadline) {
			keep = append(keep, pc)
			continue
		}
		if err == nil && n > 0 {
			var rep connectReply
			if req, ok := decodeRequest(buf[:n]); ok {
				rep = p.serve(&req)
			} else {
				rep = connectReply{status: connBad}
			}
			unix.Write(pc.fd, rep.encode())
		}
		unix.Close(pc.fd)
	}
	clear(l.pending[len(keep):])
	l.pending = keep
}

// pendingFDs returns the connections waiting for their request. Called with the
// claim's lmu held.
func (l *listener) pendingFDs() []int {
	fds := make([]int, len(l.pending))
	for i, pc := range l.pending {
		fds[i] = pc.fd
	}
	return fds
}

// wait blocks until a connection or a request waits (true) or the socket is closed
// (false). pending are the accepted connections whose request has not arrived:
// their requests wake it too. A poll from progress that leaves new pending
// connections writes to the wake pipe, so the wait takes them in.
func (l *listener) wait(pending []int) bool {
	for {
		l.mu.Lock()
		closed, fd := l.closed, l.fd
		l.inPoll = !closed
		l.mu.Unlock()
		if closed {
			return false
		}
		pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}, {Fd: int32(l.wakeR), Events: unix.POLLIN}}
		for _, p := range pending {
			pfd = append(pfd, unix.PollFd{Fd: int32(p), Events: unix.POLLIN})
		}
		timeout := -1
		if len(pending) > 0 {
			timeout = 100 // ms: pending connections expire
		}
		n, err := unix.Poll(pfd, timeout)
		l.mu.Lock()
		l.inPoll = false
		l.idle.Broadcast()
		closed = l.closed
		l.mu.Unlock()
		if closed {
			return false
		}
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return false
		}
		if pfd[1].Revents != 0 {
			var b [64]byte
			unix.Read(l.wakeR, b[:]) // drained: the pending set changed
		}
		if n > 0 || len(pending) > 0 {
			return true
		}
	}
}

// nodeConn is an open rendezvous connection to another process of the node.
type nodeConn struct{ fd int }

// dialNode opens the rendezvous connection to the process holding pid on this node.
func (ni *NI) dialNode(ctx context.Context, pid PID) (*nodeConn, error) {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("rendezvous socket: %w", err)
	}
	sa := &unix.SockaddrUnix{Name: rendezvousName(pid)}
	for i := 0; ; i++ {
		err = unix.Connect(fd, sa)
		if err != unix.EAGAIN {
			break
		}
		if ctx.Err() != nil {
			unix.Close(fd)
			return nil, fmt.Errorf("%w: pid %d: %w", errUnreachable, pid, ctx.Err())
		}
		ni.yieldConnect(i) // the backlog is full: let the target drain it
	}
	if err != nil {
		unix.Close(fd)
		// ECONNREFUSED, ENOENT: no process holds the pid on this node.
		return nil, fmt.Errorf("%w: no process with pid %d on this node: %w", errUnreachable, pid, err)
	}
	return &nodeConn{fd: fd}, nil
}

// close closes the connection.
func (c *nodeConn) close() { unix.Close(c.fd) }

// exchange sends req and waits for the answer, driving this NI's progress
// meanwhile.
func (c *nodeConn) exchange(ctx context.Context, ni *NI, pid PID, req *connectRequest) (connectReply, error) {
	if _, err := unix.Write(c.fd, req.encode()); err != nil {
		return connectReply{}, fmt.Errorf("%w: pid %d: %w", errUnreachable, pid, err)
	}
	var buf [8192]byte
	for i := 0; ; i++ {
		n, err := unix.Read(c.fd, buf[:])
		switch {
		case err == nil && n > 0:
			rep, ok := decodeReply(buf[:n])
			if !ok {
				return connectReply{}, fmt.Errorf("%w: malformed answer from pid %d", errUnreachable, pid)
			}
			return rep, nil
		case err == nil: // closed without an answer: the target went away
			return connectReply{}, fmt.Errorf("%w: pid %d closed the connection", errUnreachable, pid)
		case err != unix.EAGAIN:
			return connectReply{}, fmt.Errorf("%w: pid %d: %w", errUnreachable, pid, err)
		}
		if ctx.Err() != nil {
			return connectReply{}, fmt.Errorf("%w: pid %d did not answer: %w", errUnreachable, pid, ctx.Err())
		}
		ni.yieldConnect(i)
	}
}
