package nic

import (
	"testing"
	"time"

	"github.com/goportals/goportals/internal/napclock"
)

// BenchmarkIdleWaitRound is the cost of one round of a waiting caller's spin
// (progressOnce as CT.Wait runs it) while nothing arrives, on an NI connected to a
// peer: a message that lands during a round is seen at the next one, so half this
// cost adds to every one-way latency of a ping-pong.
func BenchmarkIdleWaitRound(b *testing.B) {
	s := newSerialPut(b, 8)
	ni := s.ct.ni
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ni.progressOnce(true)
	}
}

// TestEngineUsesPollRound: on a provider whose completion queue runs a message
// round and a completion round in one call (the soft provider's PollRound), the
// engine polls through it: an idle round of a waiting caller then takes the
// provider's progress lock once, not twice.
func TestEngineUsesPollRound(t *testing.T) {
	nis := newNIs(t, 1, NIMatching|NIPhysical)
	if _, ok := nis[0].cq.(roundPoller); !ok {
		t.Skip("the provider has no PollRound")
	}
	if nis[0].rcq == nil {
		t.Fatal("the engine does not poll with the provider's PollRound")
	}
}

// TestProgressGoroutineNapsOnTheProcessClock: while the application drives
// progress, the NI's progress goroutine steps aside on the process's shared nap
// (napclock), the one the provider's helpers nap on too, so that their naps end
// in one wake.
func TestProgressGoroutineNapsOnTheProcessClock(t *testing.T) {
	nis := newNIs(t, 2, NIMatching|NIPhysical)
	init, tgt := nis[0], nis[1]
	target(t, tgt, 8)
	m := mustMD(t, init, MDSpec{Start: make([]byte, 8)})
	dst := mustPhysID(t, tgt)
	clock := napclock.Process()
	before := clock.Naps()
	deadline := time.Now().Add(5 * time.Second)
	for clock.Naps() == before && time.Now().Before(deadline) {
		// Puts that arrive wake the target's progress goroutine wherever it
		// waits; the target's application polls meanwhile.
		if err := Put(m, 0, 8, NoAckReq, dst, 4, 0x42, 0, 0, 0); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 1000; i++ {
			tgt.progressOnce(true)
			init.progressOnce(true)
		}
	}
	if clock.Naps() == before {
		t.Fatal("5 s of the application's progress rounds and no progress goroutine napped on the process's clock")
	}
}
