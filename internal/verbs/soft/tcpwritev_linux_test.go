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
		l.txMu.Unlock()
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
