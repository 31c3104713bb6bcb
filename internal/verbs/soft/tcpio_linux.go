package soft

import (
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// writev writes the buffers with one call (non-blocking socket, no SIGPIPE):
// a small frame (smallWrite bytes at most, header and payload) is gathered into
// one buffer and sent with send(2), a larger one with sendmsg(2). The calls are
// made without the runtime's system call hooks: on a non-blocking socket they
// cannot block, and the hooks cost a good part of a small write. The socket
// calls skip the file layer that write(2) and writev(2) go through, and send(2)
// the import of an iovec: with recvfrom in readFD, about 2% of an 8-byte
// ping-pong's round trip over loopback.
func writev(fd int, iov [][]byte) (int, error) {
	total := 0
	for _, b := range iov {
		total += len(b)
	}
	if total == 0 {
		return 0, nil
	}
	if total <= smallWrite {
		var small [smallWrite]byte
		n := 0
		for _, b := range iov {
			n += copy(small[n:], b)
		}
		return sendFD(fd, small[:n])
	}
	var vecs [64]unix.Iovec
	k := 0
	for _, b := range iov {
		if k == len(vecs) {
			break
		}
		if len(b) > 0 {
			vecs[k].Base = &b[0]
			vecs[k].SetLen(len(b))
			k++
		}
	}
	msg := unix.Msghdr{Iov: &vecs[0]}
	msg.SetIovlen(k)
	r, _, e := unix.RawSyscall(unix.SYS_SENDMSG, uintptr(fd), uintptr(unsafe.Pointer(&msg)), unix.MSG_DONTWAIT|unix.MSG_NOSIGNAL)
	runtime.KeepAlive(iov)
	return sent(r, e)
}

// sendFD writes b with one send(2) (non-blocking socket, no SIGPIPE), without
// the runtime's system call hooks (see writev).
func sendFD(fd int, b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	r, _, e := unix.RawSyscall6(unix.SYS_SENDTO, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)),
		unix.MSG_DONTWAIT|unix.MSG_NOSIGNAL, 0, 0)
	runtime.KeepAlive(b)
	return sent(r, e)
}

// sent turns a write's raw result into its bytes and error: 0 bytes on any
// error, and none for an interrupted call (the caller writes again).
func sent(r uintptr, e unix.Errno) (int, error) {
	switch e {
	case 0:
		return int(r), nil
	case unix.EINTR:
		return 0, nil
	}
	return 0, e
}

// readFD reads from the socket fd (non-blocking) with recvfrom(2), without the
// runtime's system call hooks (see writev).
func readFD(fd int, b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	n, _, e := unix.RawSyscall6(unix.SYS_RECVFROM, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)),
		unix.MSG_DONTWAIT, 0, 0)
	if e != 0 {
		if e == unix.EINTR {
			e = unix.EAGAIN
		}
		return 0, e
	}
	return int(n), nil
}

// dupFD returns a duplicate of the socket descriptor fd (close on exec; it
// shares fd's non-blocking mode).
func dupFD(fd int) (int, error) {
	return unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
}

// fdCloser closes a descriptor.
type fdCloser int

func (f fdCloser) Close() error { return unix.Close(int(f)) }

// readable reports whether the socket fd holds data to read (or an error or end
// of file to learn): a poll with no timeout, made without the runtime's system
// call hooks (it cannot block). Unlike a read that finds nothing, it does not
// take the socket's lock, which the kernel's delivery of an arriving segment
// would wait for (or hand to the reader's release, after the read has looked).
func readable(fd int) bool {
	pfd := unix.PollFd{Fd: int32(fd), Events: unix.POLLIN}
	n, e := pollNow(&pfd)
	if e != 0 {
		return true // let the read tell
	}
	return n != 0
}
