package soft

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// writev writes the buffers with one vectored write (non-blocking socket).
//
// The system call is made directly: unix.Writev tells the race detector that
// the buffers were read only after the call returns, when the peer may already
// have answered the frame and the application, told of its completion by
// another goroutine, may be writing the buffers again (a race report with no
// race: the kernel copied them before the call returned). They are declared
// read here, before the call, which is when the kernel reads them, and the
// reads are released to the goroutine that reads the peer's answer.
func writev(fd int, iov [][]byte) (int, error) {
	var small [64]unix.Iovec
	vecs := small[:0]
	if len(iov) > len(small) {
		vecs = make([]unix.Iovec, 0, len(iov))
	}
	for _, b := range iov {
		if len(b) == 0 {
			continue
		}
		raceReadBytes(b)
		v := unix.Iovec{Base: &b[0]}
		v.SetLen(len(b))
		vecs = append(vecs, v)
	}
	if len(vecs) == 0 {
		return 0, nil
	}
	// The peer's answer to these frames, read by whichever goroutine, orders
	// these reads before the completion (the reader acquires at each frame).
	raceRelease()
	n, _, e := unix.Syscall(unix.SYS_WRITEV, uintptr(fd), uintptr(unsafe.Pointer(&vecs[0])), uintptr(len(vecs)))
	if e == unix.EINTR {
		return 0, nil
	}
	if e != 0 {
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
