package nic

import (
	"testing"
	"time"

	"github.com/goportals/goportals/internal/napclock"
)

// TestReviewKickEndsTheGoroutinesNap: a caller about to block (EQ or CT wait
// past its spin) kicks the progress goroutine, which must then drive progress:
// the blocked caller depends on it. The goroutine must not go back into the
// process's nap that was running when it was kicked (up to NapMax long) just
// because the caller polled during that nap.
//
// The test makes the target's goroutine nap by holding its progress lock (a
// caller's round of its own), with a put waiting so that the goroutine is
// awake, not asleep in the provider's wait. It then polls once (the caller's
// spin), lets go of the lock and kicks, as EQ.Wait does before it blocks, and
// sends one more put: its count must arrive while the nap that was running at
// the kick still runs, in one attempt at least of up to 20 (under load an
// attempt's steps can outlast the nap; with the defect none ever arrives
// before it ends).
func TestReviewKickEndsTheGoroutinesNap(t *testing.T) {
	nis := newNIs(t, 2, NIMatching|NIPhysical)
	init, tgt := nis[0], nis[1]
	_, _, ct := target(t, tgt, 8)
	m := mustMD(t, init, MDSpec{Start: make([]byte, 8)})
	dst := mustPhysID(t, tgt)
	clock := napclock.Process()
	count := func() uint64 { return ct.c.Cell().Load().Success }
	put := func() {
		if err := Put(m, 0, 8, NoAckReq, dst, 4, 0x42, 0, 0, 0); err != nil {
			t.Fatal(err)
		}
	}
	early, late := 0, 0
	for attempt := 0; attempt < 20 && early == 0; attempt++ {
		tgt.progMu.Lock()
		before := clock.Naps()
		put()
		// The goroutine wakes for the put's completion and naps beside the
		// held lock, nap after nap, each twice the last.
		deadline := time.Now().Add(5 * time.Second)
		for clock.Naps()-before < 6 && time.Now().Before(deadline) {
			time.Sleep(100 * time.Microsecond)
		}
		nap := clock.Nap() // the nap the goroutine is in
		tgt.progressOnce(true)
		tgt.progMu.Unlock()
		got := count()
		tgt.kick()
		// The goroutine, kicked, handles the first put; then a second arrives.
		for count() == got {
			time.Sleep(20 * time.Microsecond)
		}
		time.Sleep(300 * time.Microsecond)
		got = count()
		put()
		for count() == got {
			time.Sleep(20 * time.Microsecond)
		}
		select {
		case <-nap:
			late++
		default:
			early++
		}
		<-nap
		time.Sleep(2 * time.Millisecond)
	}
	if early == 0 {
		t.Fatalf("kicked by a caller about to block, the progress goroutine went back into the process's running nap (up to %v): in %d attempts of %d a put after the kick was served only once that nap ended", napclock.NapMax, late, late)
	}
}
