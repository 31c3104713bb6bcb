package nic

import (
	"testing"

	"github.com/goportals/goportals/eq"
)

// A CTInc that crosses a threshold while another goroutine is firing an earlier
// trigger of the same counter must still issue what it released before it returns.
func TestRuleCTIncDuringConcurrentFiring(t *testing.T) {
	nis := newNIs(t, 2, NIMatching|NIPhysical)
	init, tgt := nis[0], nis[1]
	q, err := tgt.EQAlloc(4096)
	if err != nil {
		t.Fatal(err)
	}
	idx := mustPT(t, tgt, 0, q)
	mustME(t, tgt, idx, MESpec{Start: make([]byte, 64), UID: UIDAny, Options: MEOpPut | MEEventLinkDisable,
		MatchID: anyProc(), IgnoreBits: ^MatchBits(0)}, PriorityList, 0)
	m, err := init.MDBind(MDSpec{Start: make([]byte, 8), Options: MDEventSuccessDisable})
	if err != nil {
		t.Fatal(err)
	}
	trig := mustCT(t, init)
	dst := mustPhysID(t, tgt)
	bad := 0
	rounds := uint64(2000)
	if testing.Short() {
		rounds = 300
	}
	for r := uint64(1); r <= rounds; r++ {
		if err := TriggeredPut(m, 0, 8, NoAckReq, dst, idx, 0, 0, 0, 1, trig, 2*r-1); err != nil {
			t.Fatal(err)
		}
		if err := TriggeredPut(m, 0, 8, NoAckReq, dst, idx, 0, 0, 0, 2, trig, 2*r); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { trig.Inc(CTEvent{Success: 1}); close(done) }()
		for {
			v, err := trig.Get()
			if err != nil {
				t.Fatalf("CT.Get: %v", err)
			}
			if v.Success >= 2*r-1 {
				break
			}
		}
		if err := trig.Inc(CTEvent{Success: 1}); err != nil { // releases the hdr-2 put
			t.Fatal(err)
		}
		if err := Put(m, 0, 8, NoAckReq, dst, idx, 0, 0, 0, 3); err != nil {
			t.Fatal(err)
		}
		<-done
		var got []uint64
		for len(got) < 3 {
			ev := waitEvent(t, q)
			if ev.Type == eq.EventPut {
				got = append(got, ev.HdrData)
			}
		}
		pos := map[uint64]int{}
		for i, h := range got {
			pos[h] = i
		}
		if pos[2] > pos[3] {
			bad++
		}
	}
	if bad > 0 {
		t.Fatalf("%d of %d rounds: the put released by CTInc arrived after a put started once CTInc returned", bad, rounds)
	}
}

// Rule: max_entries holds for an append that waited for data in flight while other
// entries were appended.
func TestRuleMaxEntriesAcrossWait(t *testing.T) {
	nis := newNIsWith(t, 2, NIMatching|NIPhysical, &Limits{MaxEntries: 3})
	init, tgt := nis[0], nis[1]
	q := mustEQ(t, tgt)
	a := mustPT(t, tgt, 0, q)
	b := mustPT(t, tgt, 0, nil)
	size := 256 << 10
	mustME(t, tgt, a, MESpec{Start: make([]byte, size), UID: UIDAny, Options: MEOpPut | MEEventLinkDisable,
		MatchID: anyProc(), MatchBits: 5}, OverflowList, 100)
	hold := newHoldLong(t)
	putFrom(t, init, make([]byte, size), tgt, a, 5)
	hold.wait(t)
	done := make(chan error, 1)
	since := tgt.appPolls.Load()
	go func() {
		_, err := tgt.MEAppend(a, MESpec{Start: make([]byte, 8), UID: UIDAny, Options: MEOpPut | MEEventLinkDisable,
			MatchID: anyProc(), MatchBits: 5}, PriorityList, 200)
		done <- err
	}()
	waitingOnEngine(t, tgt, since, done)
	spec := MESpec{Start: make([]byte, 8), UID: UIDAny, Options: MEOpPut, MatchID: anyProc()}
	mustME(t, tgt, b, spec, PriorityList, 0)
	mustME(t, tgt, b, spec, PriorityList, 0)
	hold.letGo()
	err := <-done
	tgt.mu.Lock()
	n := tgt.entryCount()
	tgt.mu.Unlock()
	if err == nil && n > 3 {
		t.Fatalf("the NI holds %d entries, max_entries is 3", n)
	}
}
