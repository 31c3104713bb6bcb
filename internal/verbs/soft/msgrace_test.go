package soft

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/goportals/goportals/internal/verbs"
)

// TestMessagesPollRacesFailingPost: a work request that fails the receiving
// queue pair at post (from an application thread) while PollMessages hands out
// its messages on another thread: the race detector sees no unsynchronized
// access to the queue pair's receive state.
func TestMessagesPollRacesFailingPost(t *testing.T) {
	p := msgPair(t, 64)
	for i := 0; i < 3000; i++ {
		if err := p.A.QP.(verbs.MessageSender).SendMessage([]byte{1, 2, 3}); err != nil {
			break
		}
	}
	mc := p.B.CQ.(verbs.MessageCQ)
	var stop atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		h := func(uint64, []byte) bool { return true }
		for !stop.Load() {
			mc.PollMessages(h, 1)
		}
	}()
	time.Sleep(2 * time.Millisecond) // (not a synchronization the race detector sees)
	src := make([]byte, 64)
	// An unregistered local key: the queue pair fails at post.
	p.B.QP.PostSend([]verbs.SendWR{{Opcode: verbs.OpRDMAWrite, SG: []verbs.SGE{{Addr: addrOfBytes(src), Length: 64, LKey: 12345}},
		RemoteAddr: 1, RKey: 1}})
	time.Sleep(2 * time.Millisecond)
	stop.Store(true)
	<-done
	if p.B.QP.State() != verbs.QPError {
		t.Fatalf("state %v", p.B.QP.State())
	}
}
