package nic

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
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

// listener is the process's rendezvous socket.
type listener struct {
	f       *os.File // the listening socket, registered with the runtime's poller
	rc      syscall.RawConn
	pending []pendingConn // accepted connections whose request has not arrived yet
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
	f := os.NewFile(uintptr(fd), rendezvousName(pid))
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("rendezvous socket: %w", err)
	}
	return &listener{f: f, rc: rc}, nil
}

// Close closes the socket: the name is free again, and the listener's goroutine
// ends.
func (l *listener) Close() error { return l.f.Close() }

// dropPending closes the connections still waiting for their request. Called with
// the claim's lmu held, once the socket is closed.
func (l *listener) dropPending() {
	for _, pc := range l.pending {
		unix.Close(pc.fd)
	}
	l.pending = nil
}

// poll accepts and serves what waits, without blocking. Called with the claim's
// lmu held.
func (l *listener) poll(p *Process) {
	var fds []int
	l.rc.Control(func(fd uintptr) {
		for {
			nfd, _, err := unix.Accept4(int(fd), unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC)
			if err != nil {
				return
			}
			fds = append(fds, nfd)
		}
	})
	now := time.Now()
	for _, fd := range fds {
		l.pending = append(l.pending, pendingConn{fd: fd, deadline: now.Add(5 * time.Second)})
	}
	if len(l.pending) == 0 {
		return
	}
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

// hasPending reports whether accepted connections wait for their request. Called
// by the listener's goroutine, which alone waits, with lmu not held: a stale answer
// only costs a nap or a poll.
func (l *listener) hasPending() bool { return len(l.pending) > 0 }

// wait blocks until a connection waits at the socket (true) or the socket is
// closed (false). With connections pending their request it only naps.
func (l *listener) wait(hasPending bool) bool {
	if hasPending {
		time.Sleep(50 * time.Microsecond)
		return true
	}
	err := l.rc.Read(func(fd uintptr) bool {
		pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(pfd, 0)
		return err == nil && n > 0
	})
	return err == nil
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
