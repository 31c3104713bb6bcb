package nic

import (
	"testing"
	"time"
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

// TestAppNapGrows: while the application keeps driving progress, each nap of the
// progress goroutine is twice the one before, up to appNapMax (every end of a nap
// wakes a thread, which on a host whose cores are busy preempts a spinning
// caller); a first nap (the application had stopped) is appNap.
func TestAppNapGrows(t *testing.T) {
	d := time.Duration(0)
	var seen []time.Duration
	for i := 0; i < 12; i++ {
		d = nextAppNap(d)
		seen = append(seen, d)
	}
	if seen[0] != appNap || seen[1] != 2*appNap || seen[len(seen)-1] != appNapMax {
		t.Fatalf("naps while the application polls: %v", seen)
	}
	for i := 1; i < len(seen); i++ {
		if seen[i] < seen[i-1] || seen[i] > appNapMax {
			t.Fatalf("naps while the application polls: %v", seen)
		}
	}
}

// TestAppNapBoundsPassiveTarget: however long callers polled, the nap the
// progress goroutine is in when the application stops calling the library (a
// target gone off to compute, or one that polls with CT or EQ Get only now and
// then, which keeps the naps at their longest) is all a remote put or get to it
// waits before the goroutine serves it. That stays within twice the first nap.
func TestAppNapBoundsPassiveTarget(t *testing.T) {
	d := time.Duration(0)
	for i := 0; i < 64; i++ {
		if d = nextAppNap(d); d > 2*appNap {
			t.Fatalf("nap %d while callers poll: %v; a target whose application stops calling waits that long for its goroutine", i, d)
		}
	}
}
