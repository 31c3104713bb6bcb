package soft

import (
	"bytes"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/goportals/goportals/internal/verbs"
	"github.com/goportals/goportals/internal/verbs/verbstest"
)

// fenceCase is a TCP pair on which A posted a READ (ID 1) that B has not
// answered yet and an RDMA WRITE (ID 2) fenced behind it: src[0:1024] to
// dst[0:1024].
type fenceCase struct {
	p        *verbstest.Pair
	src, dst *verbstest.Buffer
	bl       *tcpLink
}

// newFenceCase posts the READ (with readKey, or dst's key when 0) and the
// fenced WRITE (with the extra flags) while B serves nothing; serve lets B go.
func newFenceCase(t *testing.T, readKey uint32, flags verbs.SendFlags) *fenceCase {
	t.Helper()
	p := tcpMsgPair(t, 64)
	f := &fenceCase{p: p, src: p.A.Reg(t, 4096, rwx, 3), dst: p.B.Reg(t, 4096, rwx, 0), bl: p.B.QP.(*qp).link}
	if readKey == 0 {
		readKey = f.dst.MR.RKey()
	}
	f.bl.rxMu.Lock() // B serves nothing for now: the READ stays outstanding
	rd := verbs.SendWR{ID: 1, Opcode: verbs.OpRDMARead, Flags: verbs.SendSignaled, SG: []verbs.SGE{f.src.SGE(2048, 64)}, RemoteAddr: f.dst.Addr(2048), RKey: readKey}
	fenced := verbs.SendWR{ID: 2, Opcode: verbs.OpRDMAWrite, Flags: verbs.SendFence | flags, SG: []verbs.SGE{f.src.SGE(0, 1024)}, RemoteAddr: f.dst.Addr(0), RKey: f.dst.MR.RKey()}
	if err := p.A.QP.PostSend([]verbs.SendWR{rd, fenced}); err != nil {
		f.bl.rxMu.Unlock()
		t.Fatal(err)
	}
	return f
}

// serve lets B serve the READ: its answer releases the fenced WRITE.
func (f *fenceCase) serve() { f.bl.rxMu.Unlock() }

// poll drives both sides until done says A's completions so far suffice, or d
// runs out; it returns A's completions by ID and how many came. h, if set,
// takes B's messages.
func (f *fenceCase) poll(d time.Duration, h verbs.MessageHandler, done func(map[uint64]verbs.Status) bool) (map[uint64]verbs.Status, int) {
	var wc [4]verbs.WorkCompletion
	got, n := map[uint64]verbs.Status{}, 0
	for deadline := time.Now().Add(d); !done(got) && time.Now().Before(deadline); {
		k, _ := f.p.A.CQ.Poll(wc[:])
		for _, w := range wc[:k] {
			got[w.ID] = w.Status
			n++
		}
		if h != nil {
			f.p.B.CQ.(*cq).PollRound(h, 4, wc[:])
		} else {
			f.p.B.CQ.Poll(wc[:])
		}
	}
	return got, n
}

// succeeded reports whether every one of ids completed, and fails the test on
// a completion in error.
func succeeded(t *testing.T, ids ...uint64) func(map[uint64]verbs.Status) bool {
	return func(got map[uint64]verbs.Status) bool {
		for id, st := range got {
			if st != verbs.StatusSuccess {
				t.Fatalf("completion of %d: %v", id, st)
			}
		}
		for _, id := range ids {
			if _, ok := got[id]; !ok {
				return false
			}
		}
		return true
	}
}

// setUnfencedHook sets testUnfencedHook for one call, until the test ends, and
// returns a channel closed once it ran.
func setUnfencedHook(t *testing.T, h func(*tcpLink)) <-chan struct{} {
	t.Helper()
	ran := make(chan struct{})
	var once sync.Once
	f := func(l *tcpLink) { once.Do(func() { h(l); close(ran) }) }
	testUnfencedHook.Store(&f)
	t.Cleanup(func() { testUnfencedHook.Store(nil) })
	return ran
}

// hookRan fails the test if the hook did not run: the fence never cleared.
func hookRan(t *testing.T, ran <-chan struct{}) {
	t.Helper()
	select {
	case <-ran:
	default:
		t.Fatal("the fence never cleared (hook not run)")
	}
}

// TestTCPFencedFrameNotOvertaken: a fenced WRITE held behind a READ goes out
// when the READ's answer arrives, before any request posted after that: a
// WRITE posted at the moment the fence clears (from the hook, between the
// release of the held frames and the return of the answer's handling) lands
// after the fenced one, so its bytes are the ones left.
func TestTCPFencedFrameNotOvertaken(t *testing.T) {
	f := newFenceCase(t, 0, verbs.SendSignaled)
	second := f.p.A.Reg(t, 4096, rwx, 5)
	ran := setUnfencedHook(t, func(*tcpLink) {
		later := verbs.SendWR{ID: 3, Opcode: verbs.OpRDMAWrite, Flags: verbs.SendSignaled, SG: []verbs.SGE{second.SGE(0, 1024)}, RemoteAddr: f.dst.Addr(0), RKey: f.dst.MR.RKey()}
		if err := f.p.A.QP.PostSend([]verbs.SendWR{later}); err != nil {
			t.Errorf("the WRITE posted as the fence cleared: %v", err)
		}
	})
	f.serve()
	got, _ := f.poll(10*time.Second, nil, succeeded(t, 1, 2, 3))
	hookRan(t, ran)
	if len(got) != 3 {
		t.Fatalf("completions %v in 10 s, want the READ's and both WRITEs'", got)
	}
	if !bytes.Equal(f.dst.Mem[:1024], second.Mem[:1024]) {
		if bytes.Equal(f.dst.Mem[:1024], f.src.Mem[:1024]) {
			t.Fatal("the fenced WRITE landed last: the WRITE posted after the fence cleared overtook it")
		}
		t.Fatal("the destination holds neither WRITE's bytes")
	}
}

// TestTCPFencedFrameReleasedWhenReadFails: a READ that the peer refuses (a bad
// key) fails the link; the fenced WRITE held behind it is flushed, once, and
// its hold on the source region released, so the region deregisters.
func TestTCPFencedFrameReleasedWhenReadFails(t *testing.T) {
	f := newFenceCase(t, 0x5a5a00, verbs.SendSignaled)
	f.serve()
	got, _ := f.poll(10*time.Second, nil, func(got map[uint64]verbs.Status) bool { return len(got) == 2 })
	// A while longer: a completion reported twice would show.
	_, n := f.poll(200*time.Millisecond, nil, func(map[uint64]verbs.Status) bool { return false })
	if n != 0 || got[1] == verbs.StatusSuccess || got[2] != verbs.StatusWorkRequestFlushed {
		t.Fatalf("completions %v and %d more: want two, the READ failed and the fenced WRITE flushed", got, n)
	}
	// The link's end (broken) runs on its own goroutine: the holds drop soon.
	m := f.src.MR.(*mr)
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
	f := newFenceCase(t, 0, 0)
	ms := f.p.A.QP.(verbs.MessageSender)
	ran := setUnfencedHook(t, func(*tcpLink) {
		if err := ms.SendMessage([]byte("fin")); err != nil {
			t.Errorf("SendMessage as the fence cleared: %v", err)
		}
	})
	f.serve()
	var msgs []string
	h := func(_ uint64, b []byte) bool {
		if string(b) == "fin" && !bytes.Equal(f.dst.Mem[:1024], f.src.Mem[:1024]) {
			t.Errorf("the message came before the fenced WRITE's data")
		}
		msgs = append(msgs, string(b))
		return true
	}
	f.poll(10*time.Second, h, func(map[uint64]verbs.Status) bool { return len(msgs) > 0 })
	hookRan(t, ran)
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
	f := newFenceCase(t, 0, verbs.SendSignaled)
	ran := setUnfencedHook(t, func(l *tcpLink) {
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
	f.serve()
	got, _ := f.poll(5*time.Second, nil, succeeded(t, 1, 2))
	hookRan(t, ran)
	if _, ok := got[2]; !ok {
		t.Fatalf("completions %v in 5 s: the fenced WRITE was never written", got)
	}
	if !bytes.Equal(f.dst.Mem[:1024], f.src.Mem[:1024]) {
		t.Fatal("the fenced WRITE's bytes are not at the destination")
	}
}
