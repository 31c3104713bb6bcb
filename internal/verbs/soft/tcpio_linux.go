package soft

import (
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// writev writes the buffers with one vectored write (non-blocking socket). The
// call is made without the runtime's system call hooks: on a non-blocking
// socket it cannot block, and the hooks cost a good part of a small write.
func writev(fd int, iov [][]byte) (int, error) {
	var vecs [64]unix.Iovec
	k := 0
	for _, b := range iov {
		if k == len(vecs) {
			break
		}
		if len(b) == 0 {
			continue
		}
		vecs[k].Base = &b[0]
		vecs[k].SetLen(len(b))
		k++
	}
	if k == 0 {
		return 0, nil
	}
	n, _, e := unix.RawSyscall(unix.SYS_WRITEV, uintptr(fd), uintptr(unsafe.Pointer(&vecs[0])), uintptr(k))
	runtime.KeepAlive(iov)
	switch e {
	case 0:
		return int(n), nil
	case unix.EINTR:
		return 0, nil
	}
	return 0, e
}

// readFD reads from the socket fd (non-blocking) without the runtime's system
// call hooks (see writev).
func readFD(fd int, b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	n, _, e := unix.RawSyscall(unix.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
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
