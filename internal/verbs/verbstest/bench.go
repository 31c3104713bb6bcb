package verbstest

import (
	"testing"
	"time"

	"github.com/goportals/goportals/internal/verbs"
)

// spinPoll polls cq until it returns at least one completion into wc, failing b when
// none arrives within timeout. It checks the clock only every 4096 polls.
func spinPoll(b *testing.B, cq verbs.CQ, wc []verbs.WorkCompletion, timeout time.Duration) int {
	var deadline time.Time
	for spin := 1; ; spin++ {
		n, err := cq.Poll(wc)
		if err != nil {
			b.Error(err)
			return 0
		}
		if n > 0 {
			return n
		}
		if spin%4096 == 0 {
			if deadline.IsZero() {
				deadline = time.Now().Add(timeout)
			} else if time.Now().After(deadline) {
				b.Errorf("no completion within %v", timeout)
				return 0
			}
		}
	}
}

// pinger is one side of the ping-pong: it waits for a message and answers it.
type pinger struct {
	s    *Side
	buf  *Buffer
	wc   [16]verbs.WorkCompletion
	send [1]verbs.SendWR
	recv [1]verbs.RecvWR
	sgs  [pingRecvs][1]verbs.SGE
	sent int
}

const pingRecvs = 64

func newPinger(b *testing.B, s *Side) *pinger {
	pg := &pinger{s: s, buf: s.Reg(b, 16*pingRecvs, rw, 0)}
	for i := range pingRecvs {
		pg.sgs[i][0] = pg.buf.SGE(16*i, 8)
		must(b, "post recv", s.QP.PostRecv([]verbs.RecvWR{{ID: uint64(i), SG: pg.sgs[i][:]}}))
	}
	pg.send[0] = verbs.SendWR{Opcode: verbs.OpSend, SG: []verbs.SGE{pg.buf.SGE(16*pingRecvs-8, 8)}}
	return pg
}

// ping sends one 8-byte message, signaled every 32 sends so the send queue drains.
func (pg *pinger) ping(b *testing.B) bool {
	pg.sent++
	pg.send[0].Flags = 0
	if pg.sent%32 == 0 {
		pg.send[0].Flags = verbs.SendSignaled
	}
	if err := pg.s.QP.PostSend(pg.send[:]); err != nil {
		b.Error(err)
		return false
	}
	return true
}

// await waits for the next message, reposting its receive; send completions are consumed.
func (pg *pinger) await(b *testing.B, timeout time.Duration) bool {
	for {
		n := spinPoll(b, pg.s.CQ, pg.wc[:1], timeout)
		if n == 0 {
			return false
		}
		wc := pg.wc[0]
		if wc.Status != verbs.StatusSuccess {
			b.Errorf("completion %+v: %v", wc, wc.Status)
			return false
		}
		if wc.Opcode != verbs.WCRecv {
			continue
		}
		pg.recv[0] = verbs.RecvWR{ID: wc.ID, SG: pg.sgs[wc.ID%pingRecvs][:]}
		if err := pg.s.QP.PostRecv(pg.recv[:]); err != nil {
			b.Error(err)
			return false
		}
		return true
	}
}

// BenchSendLatency measures an 8-byte SEND ping-pong between the two sides of env, each
// on its own goroutine polling its queue. ns/op is the one-way latency (half a round
// trip); rtt-ns/op is the round trip.
func BenchSendLatency(b *testing.B, env Env) {
	p := NewPair(b, env)
	a, z := newPinger(b, p.A), newPinger(b, p.B)
	timeout := env.timeout()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range b.N {
			if !z.await(b, timeout) || !z.ping(b) {
				return
			}
		}
	}()
	b.ResetTimer()
	for range b.N {
		if !a.ping(b) || !a.await(b, timeout) {
			break
		}
	}
	b.StopTimer()
	<-done
	rtt := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	b.ReportMetric(rtt/2, "ns/op")
	b.ReportMetric(rtt, "rtt-ns/op")
}

// BenchWriteBandwidth measures RDMA WRITEs of size bytes from A to B, keeping up to 8 in
// flight; b.SetBytes makes the benchmark report MB/s. The last write is checked.
func BenchWriteBandwidth(b *testing.B, env Env, size int) {
	const depth = 8
	p := NewPair(b, env)
	src := p.A.Reg(b, size, 0, 61)
	dst := p.B.Reg(b, size, rw|verbs.AccessRemoteWrite, 0)
	wr := []verbs.SendWR{{Opcode: verbs.OpRDMAWrite, Flags: verbs.SendSignaled, SG: []verbs.SGE{src.SGE(0, size)},
		RemoteAddr: dst.Addr(0), RKey: dst.MR.RKey()}}
	var wc [depth]verbs.WorkCompletion
	timeout := env.timeout()
	b.SetBytes(int64(size))
	b.ResetTimer()
	inflight, posted := 0, 0
	for posted < b.N || inflight > 0 {
		for posted < b.N && inflight < depth {
			wr[0].ID = uint64(posted)
			if err := p.A.QP.PostSend(wr); err != nil {
				b.Fatal(err)
			}
			posted++
			inflight++
		}
		n := spinPoll(b, p.A.CQ, wc[:], timeout)
		if n == 0 {
			b.FailNow()
		}
		for _, c := range wc[:n] {
			if c.Status != verbs.StatusSuccess {
				b.Fatalf("completion %+v: %v", c, c.Status)
			}
		}
		inflight -= n
	}
	b.StopTimer()
	sameBytes(b, "written bytes", dst.Mem, src.Mem)
}
