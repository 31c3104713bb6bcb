package soft

import (
	"bytes"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/goportals/goportals/internal/verbs"
)

// TestTCPFencedFrameNotOvertaken: a fenced WRITE held behind a READ goes out
// when the READ's answer arrives, before any request posted after that: a
// WRITE posted at the moment the fence clears (from the hook, between the
// release of the held frames and the return of the answer's handling) lands
// after the fenced one, so its bytes are the ones left.
func TestTCPFencedFrameNotOvertaken(t *testing.T) {
	p := tcpMsgPair(t, 64)
	first := p.A.Reg(t, 4096, rwx, 3)
	second := p.A.Reg(t, 4096, rwx, 5)
	dst := p.B.Reg(t, 4096, rwx, 0)
	bl := p.B.QP.(*qp).link
	bl.rxMu.Lock() // B serves nothing for now: the READ stays outstanding
	rd := verbs.SendWR{ID: 1, Opcode: verbs.OpRDMARead, Flags: verbs.SendSignaled, SG: []verbs.SGE{first.SGE(2048, 64)}, RemoteAddr: dst.Addr(2048), RKey: dst.MR.RKey()}
	fenced := verbs.SendWR{ID: 2, Opcode: verbs.OpRDMAWrite, Flags: verbs.SendFence | verbs.SendSignaled, SG: []verbs.SGE{first.SGE(0, 1024)}, RemoteAddr: dst.Addr(0), RKey: dst.MR.RKey()}
	if err := p.A.QP.PostSend([]verbs.SendWR{rd, fenced}); err != nil {
		bl.rxMu.Unlock()
		t.Fatal(err)
	}
	posted := make(chan error, 1)
	setUnfencedHook(t, func(*tcpLink) {
		later := verbs.SendWR{ID: 3, Opcode: verbs.OpRDMAWrite, Flags: verbs.SendSignaled, SG: []verbs.SGE{second.SGE(0, 1024)}, RemoteAddr: dst.Addr(0), RKey: dst.MR.RKey()}
		posted <- p.A.QP.PostSend([]verbs.SendWR{later})
	})
	bl.rxMu.Unlock()
	var wc [4]verbs.WorkCompletion
	done := map[uint64]bool{}
	deadline := time.Now().Add(10 * time.Second)
	for !(done[1] && done[2] && done[3]) && time.Now().Before(deadline) {
		k, _ := p.A.CQ.Poll(wc[:])
		for _, w := range wc[:k] {
			if w.Status != verbs.StatusSuccess {
				t.Fatalf("completion %+v", w)
			}
			done[w.ID] = true
		}
		p.B.CQ.Poll(wc[:])
	}
	select {
	case err := <-posted:
		if err != nil {
			t.Fatalf("the WRITE posted as the fence cleared: %v", err)
		}
	default:
		t.Fatal("the fence never cleared (hook not run)")
	}
	if !done[1] || !done[2] || !done[3] {
		t.Fatalf("completions %v in 10 s, want the READ's and both WRITEs'", done)
	}
	if !bytes.Equal(dst.Mem[:1024], second.Mem[:1024]) {
		if bytes.Equal(dst.Mem[:1024], first.Mem[:1024]) {
			t.Fatal("the fenced WRITE landed last: the WRITE posted after the fence cleared overtook it")
		}
		t.Fatal("the destination holds neither WRITE's bytes")
	}
}

// TestTCPFencedFrameReleasedWhenReadFails: a READ that the peer refuses (a bad
// key) fails the link; the fenced WRITE held behind it is flushed and its hold
// on the source region released, so the region deregisters.
func TestTCPFencedFrameReleasedWhenReadFails(t *testing.T) {
	p := tcpMsgPair(t, 64)
	src := p.A.Reg(t, 4096, rwx, 3)
	dst := p.B.Reg(t, 4096, rwx, 0)
	bl := p.B.QP.(*qp).link
	bl.rxMu.Lock()
	rd := verbs.SendWR{ID: 1, Opcode: verbs.OpRDMARead, Flags: verbs.SendSignaled, SG: []verbs.SGE{src.SGE(2048, 64)}, RemoteAddr: dst.Addr(2048), RKey: dst.MR.RKey() ^ 0x5a5a00}
	fenced := verbs.SendWR{ID: 2, Opcode: verbs.OpRDMAWrite, Flags: verbs.SendFence | verbs.SendSignaled, SG: []verbs.SGE{src.SGE(0, 1024)}, RemoteAddr: dst.Addr(0), RKey: dst.MR.RKey()}
	if err := p.A.QP.PostSend([]verbs.SendWR{rd, fenced}); err != nil {
		bl.rxMu.Unlock()
		t.Fatal(err)
	}
	bl.rxMu.Unlock()
	var wc [4]verbs.WorkCompletion
	got := map[uint64]verbs.Status{}
	n := 0
	deadline := time.Now().Add(10 * time.Second)
	for quiet := 0; quiet < 200 && time.Now().Before(deadline); {
		k, _ := p.A.CQ.Poll(wc[:])
		for _, w := range wc[:k] {
			got[w.ID] = w.Status
			n++
		}
		p.B.CQ.Poll(wc[:])
		if len(got) == 2 && k == 0 {
			quiet++ // a while longer: a completion reported twice would show
			time.Sleep(time.Millisecond)
		}
	}
	if n != 2 || got[1] == verbs.StatusSuccess || got[2] != verbs.StatusWorkRequestFlushed {
		t.Fatalf("%d completions %v: want two, the READ failed and the fenced WRITE flushed", n, got)
	}
	// The link's end (broken) runs on its own goroutine: the holds drop soon.
	m := src.MR.(*mr)
	inflight := m.ctx.view.i32(entryOff(m.key&mrIdxMask) + eInflight)
	for i := 0; atomic.LoadInt32(inflight) != 0; i++ {
		if i == 1000 {
			t.Fatalf("the source region's hold count is %d 10 s after the READ failed, want 0 (the fenced WRITE's hold leaked, or was released twice)", atomic.LoadInt32(inflight))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestTCPMessageAfterFenceNotOvertaking: a message sent at the moment the fence
// clears (from the hook) reaches the peer after the fenced WRITE's data.
func TestTCPMessageAfterFenceNotOvertaking(t *testing.T) {
	p := tcpMsgPair(t, 64)
	src := p.A.Reg(t, 4096, rwx, 3)
	dst := p.B.Reg(t, 4096, rwx, 0)
	ms := p.A.QP.(verbs.MessageSender)
	bl := p.B.QP.(*qp).link
	bl.rxMu.Lock()
	rd := verbs.SendWR{ID: 1, Opcode: verbs.OpRDMARead, Flags: verbs.SendSignaled, SG: []verbs.SGE{src.SGE(2048, 64)}, RemoteAddr: dst.Addr(2048), RKey: dst.MR.RKey()}
	fenced := verbs.SendWR{ID: 2, Opcode: verbs.OpRDMAWrite, Flags: verbs.SendFence, SG: []verbs.SGE{src.SGE(0, 1024)}, RemoteAddr: dst.Addr(0), RKey: dst.MR.RKey()}
	if err := p.A.QP.PostSend([]verbs.SendWR{rd, fenced}); err != nil {
		bl.rxMu.Unlock()
		t.Fatal(err)
	}
	sent := make(chan error, 1)
	setUnfencedHook(t, func(*tcpLink) {
		sent <- ms.SendMessage([]byte("fin"))
	})
	bl.rxMu.Unlock()
	var wc [4]verbs.WorkCompletion
	var msgs []string
	h := func(_ uint64, b []byte) bool {
		if string(b) == "fin" && !bytes.Equal(dst.Mem[:1024], src.Mem[:1024]) {
			t.Errorf("the message came before the fenced WRITE's data")
		}
		msgs = append(msgs, string(b))
		return true
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(msgs) < 1 && time.Now().Before(deadline) {
		p.A.CQ.Poll(wc[:])
		p.B.CQ.(*cq).PollRound(h, 4, wc[:])
	}
	select {
	case err := <-sent:
		if err != nil {
			t.Fatalf("SendMessage as the fence cleared: %v", err)
		}
	default:
		t.Fatal("the fence never cleared (hook not run)")
	}
	if len(msgs) != 1 {
		t.Fatalf("messages %v in 10 s, want [fin]", msgs)
	}
}

// TestTCPFencedFrameWrittenWhenTxBusy: when the fence clears while another
// holds the link's send lock and writes nothing (as a poster taking a frame
// item for a request that the fence then holds, or the race build's barrier on
// the receive side), the released frames are written as that holder lets go:
// the flush that found the lock taken leaves them to it (txPend).
func TestTCPFencedFrameWrittenWhenTxBusy(t *testing.T) {
	p := tcpMsgPair(t, 64)
	src := p.A.Reg(t, 4096, rwx, 3)
	dst := p.B.Reg(t, 4096, rwx, 0)
	bl := p.B.QP.(*qp).link
	bl.rxMu.Lock()
	rd := verbs.SendWR{ID: 1, Opcode: verbs.OpRDMARead, Flags: verbs.SendSignaled, SG: []verbs.SGE{src.SGE(2048, 64)}, RemoteAddr: dst.Addr(2048), RKey: dst.MR.RKey()}
	fenced := verbs.SendWR{ID: 2, Opcode: verbs.OpRDMAWrite, Flags: verbs.SendFence | verbs.SendSignaled, SG: []verbs.SGE{src.SGE(0, 1024)}, RemoteAddr: dst.Addr(0), RKey: dst.MR.RKey()}
	if err := p.A.QP.PostSend([]verbs.SendWR{rd, fenced}); err != nil {
		bl.rxMu.Unlock()
		t.Fatal(err)
	}
	ran := make(chan struct{})
	setUnfencedHook(t, func(l *tcpLink) {
		close(ran)
		l.txMu.Lock()
		go func() {
			// Let go once complete's flush met the lock (it says so in
			// txPend), as item does: writing nothing of its own.
			for i := 0; !l.txPend.Load(); i++ {
				if i == 1000 {
					t.Error("complete's flush never met the held lock (txPend not set in 1 s)")
					break
				}
				time.Sleep(time.Millisecond)
			}
			l.unlockTx()
		}()
	})
	bl.rxMu.Unlock()
	var wc [4]verbs.WorkCompletion
	done := map[uint64]bool{}
	deadline := time.Now().Add(5 * time.Second)
	for !(done[1] && done[2]) && time.Now().Before(deadline) {
		k, _ := p.A.CQ.Poll(wc[:])
		for _, w := range wc[:k] {
			if w.Status != verbs.StatusSuccess {
				t.Fatalf("completion %+v", w)
			}
			done[w.ID] = true
		}
		p.B.CQ.Poll(wc[:])
	}
	select {
	case <-ran:
	default:
		t.Fatal("the fence never cleared (hook not run)")
	}
	if !done[2] {
		t.Fatalf("completions %v in 5 s: the fenced WRITE was never written", done)
	}
	if !bytes.Equal(dst.Mem[:1024], src.Mem[:1024]) {
		t.Fatal("the fenced WRITE's bytes are not at the destination")
	}
}

// setUnfencedHook sets testUnfencedHook for one call, until the test ends.
func setUnfencedHook(t *testing.T, h func(*tcpLink)) {
	t.Helper()
	var once sync.Once
	f := func(l *tcpLink) { once.Do(func() { h(l) }) }
	testUnfencedHook.Store(&f)
	t.Cleanup(func() { testUnfencedHook.Store(nil) })
}
