package soft

import (
	"context"
	"testing"

	"github.com/goportals/goportals/internal/verbs"
	"github.com/goportals/goportals/internal/verbs/verbstest"
	"golang.org/x/sys/unix"
)

// TestTCPBufferReuseAfterCompletion: once a WRITE's completion is polled, the
// application may write its source buffer again, whichever goroutine posted the
// WRITE. Here a goroutine posts WRITEs whose last element is a small buffer the
// polling goroutine rewrites at each completion; the elements before it are
// large, and the sockets' buffers hold a whole frame, so one vectored write
// takes the frame and the peer answers while the poster is still returning
// from it. Under the race detector no report may follow (the send buffer's
// reads are done before the completion can be seen).
func TestTCPBufferReuseAfterCompletion(t *testing.T) {
	t.Setenv(EnvPath, "tcp")
	p := verbstest.NewPair(t, softEnv)
	const big, small = 1 << 20, 64
	la, lb := tcpPingPong(t, p, 1) // both links run
	for _, l := range []*tcpLink{la, lb} {
		l.txMu.Lock()
		fd := l.fd
		l.unlockTx()
		unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, 16<<20)
		unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 16<<20)
	}
	x := p.A.Reg(t, big, verbs.AccessLocalWrite, 1)
	s := p.A.Reg(t, small, verbs.AccessLocalWrite, 2)
	dst := p.B.Reg(t, 3*big+small, verbs.AccessLocalWrite|verbs.AccessRemoteWrite, 0)
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	rounds := 100
	if testing.Short() {
		rounds = 10
	}
	post := make(chan int)
	errc := make(chan error, 1)
	go func() {
		for i := range post {
			err := p.A.QP.PostSend([]verbs.SendWR{{ID: uint64(i), Opcode: verbs.OpRDMAWrite, Flags: verbs.SendSignaled,
				SG:         []verbs.SGE{x.SGE(0, big), x.SGE(0, big), x.SGE(0, big), s.SGE(0, small)},
				RemoteAddr: dst.Addr(0), RKey: dst.MR.RKey()}})
			if err != nil {
				errc <- err
				return
			}
		}
		errc <- nil
	}()
	var wc [4]verbs.WorkCompletion
	for i := 0; i < rounds; i++ {
		for j := range s.Mem {
			s.Mem[j] = byte(i + j)
		}
		post <- i
		for got := false; !got; {
			k, err := p.A.CQ.Poll(wc[:])
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range wc[:k] {
				if w.Status != verbs.StatusSuccess {
					t.Fatalf("completion %+v", w)
				}
				got = true
			}
			if ctx.Err() != nil {
				t.Fatal(ctx.Err())
			}
		}
	}
	close(post)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

// TestWritevGathersAndSplits: writev sends what its buffers hold, in order,
// whether it gathers them into one send (smallWrite bytes or fewer) or sends
// them vectored (more), skipping empty buffers; readFD reads it back; a write
// to a stream whose peer is gone fails with EPIPE (no signal).
func TestWritevGathersAndSplits(t *testing.T) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fds[0])
	for _, sizes := range [][]int{
		{48, 8}, {48, 0, 22}, {smallWrite - 48, 48}, {smallWrite - 48, 49}, {48, 4096, 1, 7},
	} {
		var iov [][]byte
		var want []byte
		for i, n := range sizes {
			b := make([]byte, n)
			for j := range b {
				b[j] = byte(len(want) + j + 31*i)
			}
			iov = append(iov, b)
			want = append(want, b...)
		}
		n, err := writev(fds[0], iov)
		if err != nil || n != len(want) {
			t.Fatalf("%v: writev %d, %v; want %d", sizes, n, err, len(want))
		}
		got := make([]byte, len(want)+64)
		m, err := readFD(fds[1], got)
		if err != nil || m != len(want) || string(got[:m]) != string(want) {
			t.Fatalf("%v: read %d bytes (%v), want the %d written", sizes, m, err, len(want))
		}
		if _, err := readFD(fds[1], got); err != unix.EAGAIN {
			t.Fatalf("%v: a read of the emptied socket: %v, want EAGAIN", sizes, err)
		}
	}
	unix.Close(fds[1])
	for _, n := range []int{8, 4 * smallWrite} {
		if _, err := writev(fds[0], [][]byte{make([]byte, 48), make([]byte, n)}); err != unix.EPIPE {
			t.Fatalf("a write of %d bytes to a stream whose peer closed: %v, want EPIPE", n, err)
		}
	}
}
