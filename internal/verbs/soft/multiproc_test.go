package soft

import (
	"bytes"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/goportals/goportals/internal/netnstest"
	"github.com/goportals/goportals/internal/verbs"
)

var sizes = []int{8, 4 << 10, 1 << 20, 16 << 20}

const rw = verbs.AccessLocalWrite | verbs.AccessRemoteWrite | verbs.AccessRemoteRead

func regLocal(t testing.TB, s *side, b []byte, a verbs.Access) verbs.MR {
	t.Helper()
	m, err := s.pd.RegMR(b, a)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.Dereg(); err != nil {
			t.Errorf("deregister: %v", err)
		}
	})
	return m
}

func post(t testing.TB, s *side, wr verbs.SendWR) verbs.WorkCompletion {
	t.Helper()
	wr.Flags |= verbs.SendSignaled
	if err := s.qp.PostSend([]verbs.SendWR{wr}); err != nil {
		t.Fatal(err)
	}
	wc, err := waitWC(s.cq, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return wc
}

func sge(m verbs.MR, n int) []verbs.SGE {
	return []verbs.SGE{{Addr: m.Addr(), Length: uint32(n), LKey: m.LKey()}}
}

// TestTwoProcessTransfers moves data between two processes with SEND/RECV, RDMA
// WRITE and RDMA READ, byte for byte, at every size.
func TestTwoProcessTransfers(t *testing.T) {
	c, s := startChild(t)
	for i, size := range sizes {
		t.Run(strconv.Itoa(size), func(t *testing.T) {
			// Each side pins a region of this size; io_uring's pins of one user
			// share that user's budget, so leave room for both and the rings.
			if room := memlockRoom(); uint64(size) > room/4 {
				t.Skipf("a %d-byte region on each side does not fit RLIMIT_MEMLOCK (%d bytes) twice over", size, room)
			}
			name := fmt.Sprintf("b%d", i)
			raddr, rkey := c.reg(name, size, rw, 1)
			local := make([]byte, size)
			pattern(local, 100+i)
			lm := regLocal(t, s, local, rw)

			// SEND into a posted receive.
			c.do("recv %s", name)
			if wc := post(t, s, verbs.SendWR{Opcode: verbs.OpSend, SG: sge(lm, size)}); wc.Status != verbs.StatusSuccess {
				t.Fatalf("send: %v", wc.Status)
			}
			if f := c.do("wait"); f[1] != "0" || f[3] != strconv.Itoa(size) {
				t.Fatalf("child recv completion %v", f)
			}
			if got := c.do("sum %s", name)[0]; got != digest(local) {
				t.Fatalf("SEND: child holds %s, want %s", got, digest(local))
			}

			// RDMA WRITE of a new pattern.
			pattern(local, 200+i)
			if wc := post(t, s, verbs.SendWR{Opcode: verbs.OpRDMAWrite, SG: sge(lm, size), RemoteAddr: raddr, RKey: rkey}); wc.Status != verbs.StatusSuccess {
				t.Fatalf("write: %v", wc.Status)
			}
			if got := c.do("sum %s", name)[0]; got != digest(local) {
				t.Fatalf("WRITE: child holds %s, want %s", got, digest(local))
			}

			// RDMA READ it back into a cleared buffer.
			want := bytes.Clone(local)
			clear(local)
			if wc := post(t, s, verbs.SendWR{Opcode: verbs.OpRDMARead, SG: sge(lm, size), RemoteAddr: raddr, RKey: rkey}); wc.Status != verbs.StatusSuccess || int(wc.ByteLen) != size {
				t.Fatalf("read: %+v", wc)
			}
			if !bytes.Equal(local, want) {
				t.Fatal("READ returned different bytes")
			}
		})
	}
}

// TestTwoProcessAccessErrors checks that each kind of bad remote access completes
// with the remote access error and leaves every target byte as it was. Each case
// breaks the connection (as on RC hardware), so each gets a fresh child.
func TestTwoProcessAccessErrors(t *testing.T) {
	for _, size := range []int{64, 1 << 20} { // through the ring, and by cross-memory attach
		cases := []struct {
			name   string
			access verbs.Access
			op     verbs.Opcode
			mutate func(addr *uint64, key *uint32, c *child)
		}{
			{"bad-rkey-write", rw, verbs.OpRDMAWrite, func(_ *uint64, k *uint32, _ *child) { *k ^= 0x5a5a000 }},
			{"bad-rkey-read", rw, verbs.OpRDMARead, func(_ *uint64, k *uint32, _ *child) { *k ^= 0x5a5a000 }},
			{"out-of-bounds-write", rw, verbs.OpRDMAWrite, func(a *uint64, _ *uint32, _ *child) { *a += 8 }},
			{"out-of-bounds-read", rw, verbs.OpRDMARead, func(a *uint64, _ *uint32, _ *child) { *a -= 8 }},
			{"deregistered-write", rw, verbs.OpRDMAWrite, func(_ *uint64, _ *uint32, c *child) { c.do("dereg t") }},
			{"no-remote-write", verbs.AccessLocalWrite | verbs.AccessRemoteRead, verbs.OpRDMAWrite, nil},
			{"no-remote-read", verbs.AccessLocalWrite | verbs.AccessRemoteWrite, verbs.OpRDMARead, nil},
		}
		for _, tc := range cases {
			t.Run(fmt.Sprintf("%s-%d", tc.name, size), func(t *testing.T) {
				c, s := startChild(t)
				raddr, rkey := c.reg("t", size, tc.access, 3)
				before := c.do("sum t")[0]
				if tc.mutate != nil {
					tc.mutate(&raddr, &rkey, c)
				}
				local := make([]byte, size)
				pattern(local, 99)
				lm := regLocal(t, s, local, rw)
				wc := post(t, s, verbs.SendWR{Opcode: tc.op, SG: sge(lm, size), RemoteAddr: raddr, RKey: rkey})
				if wc.Status != verbs.StatusRemoteAccessError {
					t.Fatalf("status %v, want %v", wc.Status, verbs.StatusRemoteAccessError)
				}
				if s.qp.State() != verbs.QPError {
					t.Fatalf("queue pair state %v after the error", s.qp.State())
				}
				if after := c.do("sum t")[0]; after != before {
					t.Fatal("target bytes changed")
				}
			})
		}
	}
}

// TestTwoProcessPeerKilled kills the peer while a 16 MiB SEND waits for it to post a
// receive, and while a receive waits for data: both complete with errors, no hang.
func TestTwoProcessPeerKilled(t *testing.T) {
	c, s := startChild(t)
	// Large enough to overrun the ring, small enough to pin under an ordinary
	// user's RLIMIT_MEMLOCK.
	size := int(min(16<<20, memlockRoom()/4))
	if size < 1<<20 {
		t.Skipf("RLIMIT_MEMLOCK (%d bytes) leaves no room for a SEND larger than the ring", memlockRoom())
	}
	local := make([]byte, size)
	lm := regLocal(t, s, local, rw)
	rbuf := make([]byte, 64)
	rm := regLocal(t, s, rbuf, rw)
	if err := s.qp.PostRecv([]verbs.RecvWR{{ID: 9, SG: sge(rm, 64)}}); err != nil {
		t.Fatal(err)
	}
	if err := s.qp.PostSend([]verbs.SendWR{{ID: 8, Opcode: verbs.OpSend, Flags: verbs.SendSignaled, SG: sge(lm, size)}}); err != nil {
		t.Fatal(err)
	}
	// PostSend issued the first fragments until the ring filled; the rest waits for
	// the child, which has no receive posted.
	if n, st, off, total := s.qp.(*qp).outstanding(); n != 1 || st != esIssuing || off == 0 || off >= total {
		t.Fatalf("before the kill: %d sends outstanding, the SEND in state %d with %d of %d bytes issued; "+
			"want it partly issued (state %d)", n, st, off, total, esIssuing)
	}
	c.kill()
	seen := map[uint64]verbs.Status{}
	for len(seen) < 2 {
		wc, err := waitWC(s.cq, 30*time.Second)
		if err != nil {
			t.Fatalf("no completion after the peer died: %v", err)
		}
		seen[wc.ID] = wc.Status
	}
	if seen[8] != verbs.StatusRetryExceeded {
		t.Errorf("send completed %v, want %v", seen[8], verbs.StatusRetryExceeded)
	}
	if seen[9] != verbs.StatusWorkRequestFlushed {
		t.Errorf("receive completed %v, want %v", seen[9], verbs.StatusWorkRequestFlushed)
	}
	if s.qp.State() != verbs.QPError {
		t.Errorf("state %v", s.qp.State())
	}
}

// BenchmarkSendLatency8B is an 8-byte SEND ping-pong between two processes; ns/op
// is the one-way latency (half the round trip).
func BenchmarkSendLatency8B(b *testing.B) {
	c, s := startChild(b)
	buf := make([]byte, 64)
	m := regLocal(b, s, buf, rw)
	recv := []verbs.RecvWR{{SG: []verbs.SGE{{Addr: m.Addr(), Length: 8, LKey: m.LKey()}}}}
	send := []verbs.SendWR{{Opcode: verbs.OpSend, Flags: verbs.SendInline, SG: []verbs.SGE{{Addr: m.Addr() + 32, Length: 8}}}}
	for i := 0; i < 64; i++ {
		if err := s.qp.PostRecv(recv); err != nil {
			b.Fatal(err)
		}
	}
	warm := 1000
	if l := c.do("echo %d", b.N+warm); len(l) != 1 || l[0] != "ready" {
		b.Fatalf("child not ready: %q", l)
	}
	var wc [8]verbs.WorkCompletion
	// Receives are pre-posted and replenished after the next send leaves, so the
	// critical path holds the send and the completion only (as in OSU latency).
	pingPong := func(n int) {
		repost := 0
		for i := 0; i < n; i++ {
			if err := s.qp.PostSend(send); err != nil {
				b.Fatal(err)
			}
			for ; repost > 0; repost-- {
				if err := s.qp.PostRecv(recv); err != nil {
					b.Fatal(err)
				}
			}
			var deadline time.Time
			for got, spin := false, 1; !got; spin++ {
				k, err := s.cq.Poll(wc[:])
				if err != nil {
					b.Fatalf("poll, message %d: %v", i, err)
				}
				for _, w := range wc[:k] {
					if w.Status != verbs.StatusSuccess {
						b.Fatalf("message %d: completion %+v: %v", i, w, w.Status)
					}
					if w.Opcode == verbs.WCRecv {
						got = true
						repost++
					}
				}
				if k == 0 {
					if spin%4096 == 0 { // the clock only now and then: this is the latency path
						if deadline.IsZero() {
							deadline = time.Now().Add(30 * time.Second)
						} else if time.Now().After(deadline) {
							b.Fatalf("message %d: no reply within 30 s", i)
						}
					}
					cpuPause()
				}
			}
		}
	}
	pingPong(warm)
	b.ResetTimer()
	start := time.Now()
	pingPong(b.N)
	b.ReportMetric(float64(time.Since(start).Nanoseconds())/float64(b.N)/2, "ns/op")
	b.StopTimer()
	if l := c.line(); l != "done" {
		b.Fatalf("child did not finish: %q", l)
	}
}

// BenchmarkWriteBandwidth1MiB streams 1 MiB RDMA WRITEs to another process with
// a window of outstanding requests.
func BenchmarkWriteBandwidth1MiB(b *testing.B) {
	benchTransfer(b, verbs.OpRDMAWrite, 1<<20)
}

// BenchmarkReadBandwidth1MiB streams 1 MiB RDMA READs from another process.
func BenchmarkReadBandwidth1MiB(b *testing.B) {
	benchTransfer(b, verbs.OpRDMARead, 1<<20)
}

// BenchmarkWriteBandwidth16KiB streams ring-sized RDMA WRITEs.
func BenchmarkWriteBandwidth16KiB(b *testing.B) {
	benchTransfer(b, verbs.OpRDMAWrite, 16<<10)
}

func benchTransfer(b *testing.B, op verbs.Opcode, size int) {
	c, s := startChild(b)
	raddr, rkey := c.reg("t", size, rw, 1)
	local := make([]byte, size)
	pattern(local, 5)
	m := regLocal(b, s, local, rw)
	wr := []verbs.SendWR{{Opcode: op, Flags: verbs.SendSignaled, SG: sge(m, size), RemoteAddr: raddr, RKey: rkey}}
	const window = 16
	var wc [window]verbs.WorkCompletion
	b.SetBytes(int64(size))
	b.ResetTimer()
	posted, done := 0, 0
	var deadline time.Time
	for spin := 1; done < b.N; spin++ {
		for posted < b.N && posted-done < window {
			if err := s.qp.PostSend(wr); err != nil {
				b.Fatal(err)
			}
			posted++
		}
		k, err := s.cq.Poll(wc[:])
		if err != nil {
			b.Fatal(err)
		}
		for _, w := range wc[:k] {
			if w.Status != verbs.StatusSuccess {
				b.Fatalf("completion %+v: %v", w, w.Status)
			}
		}
		done += k
		if k > 0 {
			deadline, spin = time.Time{}, 0
		} else if spin%4096 == 0 {
			if deadline.IsZero() {
				deadline = time.Now().Add(30 * time.Second)
			} else if time.Now().After(deadline) {
				b.Fatalf("no completion within 30 s (%d of %d done)", done, b.N)
			}
		}
	}
}

// BenchmarkProcessVMWritev1MiB is the yardstick: one process_vm_writev of 1 MiB
// into another process, with no verbs around it.
func BenchmarkProcessVMWritev1MiB(b *testing.B) {
	c, _ := startChild(b)
	raddr, _ := c.reg("t", 1<<20, rw, 1)
	local := make([]byte, 1<<20)
	pattern(local, 5) // real pages, not the shared zero page the kernel would read otherwise
	parts := [][]byte{local}
	b.SetBytes(1 << 20)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := cma(c.cmd.Process.Pid, parts, raddr, true); err != nil {
			b.Fatal(err)
		}
	}
}

// TestTwoProcessTransfersAcrossNodes runs the child in another network namespace
// (another node): the queue pair takes the TCP path, and SEND, RDMA WRITE and READ
// move every size byte for byte.
func TestTwoProcessTransfersAcrossNodes(t *testing.T) {
	h := netnstest.SetupHost(t)
	childWrap = h.Wrap()
	defer func() { childWrap = nil }()
	c, s := startChild(t)
	if p := s.qp.(*qp).Path(); p != "tcp" {
		t.Fatalf("path %q between nodes, want tcp", p)
	}
	for i, size := range sizes {
		name := fmt.Sprintf("x%d", i)
		raddr, rkey := c.reg(name, size, rw|verbs.AccessRemoteAtomic, 1)
		local := make([]byte, size)
		pattern(local, 300+i)
		lm := regLocal(t, s, local, rw)
		c.do("recv %s", name)
		if wc := post(t, s, verbs.SendWR{Opcode: verbs.OpSend, SG: sge(lm, size)}); wc.Status != verbs.StatusSuccess {
			t.Fatalf("send %d: %v", size, wc.Status)
		}
		if f := c.do("wait"); f[1] != "0" || f[3] != strconv.Itoa(size) {
			t.Fatalf("child recv completion %v", f)
		}
		if got := c.do("sum %s", name)[0]; got != digest(local) {
			t.Fatalf("SEND %d: child holds %s, want %s", size, got, digest(local))
		}
		pattern(local, 400+i)
		if wc := post(t, s, verbs.SendWR{Opcode: verbs.OpRDMAWrite, SG: sge(lm, size), RemoteAddr: raddr, RKey: rkey}); wc.Status != verbs.StatusSuccess {
			t.Fatalf("write %d: %v", size, wc.Status)
		}
		if got := c.do("sum %s", name)[0]; got != digest(local) {
			t.Fatalf("WRITE %d: child holds %s, want %s", size, got, digest(local))
		}
		back := make([]byte, size)
		bm := regLocal(t, s, back, rw)
		if wc := post(t, s, verbs.SendWR{Opcode: verbs.OpRDMARead, SG: sge(bm, size), RemoteAddr: raddr, RKey: rkey}); wc.Status != verbs.StatusSuccess {
			t.Fatalf("read %d: %v", size, wc.Status)
		}
		if !bytes.Equal(back, local) {
			t.Fatalf("READ %d: data differs", size)
		}
	}
}
