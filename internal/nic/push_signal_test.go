package nic

import (
	"fmt"
	"sync"
	"testing"

	"github.com/goportals/goportals/internal/verbs"
)

// hcaSendQueue models the send queue of an HCA on a peer's queue pair: an entry
// comes back only with the completion of a signaled request posted after it, so
// unsignaled requests occupy the queue until one is signaled. The model is kind
// to the engine: it frees the entries as soon as the signaled one is posted, as
// if its completion were polled at once. A post that finds the queue full gets
// "no resources", as from the HCA's post.
type hcaSendQueue struct {
	verbs.QP
	mu       sync.Mutex
	run      int // requests posted since the last signaled one
	longest  int
	refusals int
}

func (h *hcaSendQueue) PostSend(wrs []verbs.SendWR) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.run+len(wrs) > sendDepth {
		h.refusals++
		return verbs.Errorf("post_send", verbs.ErrNoResources, nil)
	}
	if err := h.QP.PostSend(wrs); err != nil {
		return err
	}
	for _, wr := range wrs {
		if wr.Flags&verbs.SendSignaled != 0 {
			h.run = 0
		} else {
			h.run++
			h.longest = max(h.longest, h.run)
		}
	}
	return nil
}

// TestPushedWritesFreeTheSendQueue: pushed puts into an entry of many segments
// post many unsignaled WRITEs each; on a provider that frees send queue entries
// only at a signaled completion (an HCA), enough of them in a row fill the
// queue for good: the writes queued behind wait for room that never comes, and
// the puts never complete. The engine must signal one request in every signalN
// it posts on a queue pair, whatever the requests are.
func TestPushedWritesFreeTheSendQueue(t *testing.T) {
	init, tgt := pushNIs(t)
	idx := mustPT(t, tgt, 0, nil)
	const pieces, piece, puts = 48, 4096, 8
	whole := make([]byte, pieces*piece)
	iov := make([][]byte, pieces)
	for i := range iov {
		iov[i] = whole[i*piece : (i+1)*piece : (i+1)*piece]
	}
	mustME(t, tgt, idx, MESpec{Iovecs: iov, UID: UIDAny, Options: MEOpPut,
		MatchID: anyProc(), MatchBits: 1}, PriorityList, 0)
	src := make([]byte, len(whole))
	fill(src, 3)
	md, err := init.MDBind(MDSpec{Start: src, EQ: mustEQ(t, init)})
	if err != nil {
		t.Fatal(err)
	}
	ipr := mustPeer(t, init, tgt)
	hq := &hcaSendQueue{}
	wrapPeerQP(t, ipr, func(orig verbs.QP) verbs.QP { hq.QP = orig; return hq })
	before := init.Pushes()
	for i := 0; i < puts; i++ {
		if err := Put(md, 0, uint64(len(src)), AckReqFull, mustPhysID(t, tgt), idx, 1, 0, 0, 0); err != nil {
			t.Fatal(err)
		}
	}
	driveUntil(t, 1e6, func() bool { return opsLeft(init) == 0 }, func() string {
		hq.mu.Lock()
		defer hq.mu.Unlock()
		return fmt.Sprintf("%d of %d puts never completed: %d unsignaled requests in a row filled the send queue (%d posts refused)",
			opsLeft(init), puts, hq.longest, hq.refusals)
	}, tgt, init)
	if got := init.Pushes() - before; got != puts {
		t.Fatalf("%d of %d puts pushed", got, puts)
	}
	hq.mu.Lock()
	defer hq.mu.Unlock()
	if hq.longest >= signalN {
		t.Fatalf("%d unsignaled requests in a row on one queue pair, want fewer than %d", hq.longest, signalN)
	}
}
