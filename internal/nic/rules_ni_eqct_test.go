package nic

import (
	"context"
	"testing"
	"time"
)

// Rule 21: event queues and counting events die with their NI. After the last
// NIFini every use of them is ARG_INVALID, and the calls waiting on them when it
// happens (EQ and CT waits and polls) return INTERRUPTED.

func TestRulesNIFiniInterruptsWaiters(t *testing.T) {
	nis, _ := rulesJob(t, 2, NIMatching|NIPhysical, PIDAny, nil)
	ni := nis[0]
	q1 := mustEQn(t, ni, 4)
	q2 := mustEQn(t, ni, 4)
	c1 := mustCT(t, ni)
	c2 := mustCT(t, ni)
	ctx := rulesCtx(t)
	type result struct {
		what string
		err  error
	}
	waiters := []struct {
		what, fn string
		wait     func() error
	}{
		{"EQ.Wait", "eq.pollQueues", func() error { _, err := q1.Wait(ctx); return err }},
		{"EQPoll", "eq.pollQueues", func() error { _, _, err := EQPoll(ctx, []*EQ{q2}); return err }},
		{"CT.Wait", "eq.pollCounters", func() error { _, err := c1.Wait(ctx, 1); return err }},
		{"CTPoll", "eq.pollCounters", func() error { _, _, err := CTPoll(ctx, []*CT{c2}, []uint64{1}); return err }},
	}
	res := make(chan result, len(waiters))
	for _, w := range waiters {
		id := make(chan uint64, 1)
		go func() {
			id <- goroutineID()
			res <- result{w.what, w.wait()}
		}()
		waitParked(t, <-id, "select", w.fn, 20*time.Second)
	}
	if err := ni.Fini(); err != nil {
		t.Fatalf("Fini: %v", err)
	}
	for range waiters {
		select {
		case r := <-res:
			wantErrno(t, r.what+" across the last NIFini", r.err, Interrupted)
		case <-time.After(10 * time.Second):
			t.Fatal("a waiter still blocks 10 s after the last NIFini")
		}
	}
}

func TestRulesNIFiniInvalidatesEQCT(t *testing.T) {
	nis, procs := rulesJob(t, 2, NIMatching|NIPhysical, PIDAny, nil)
	ni := nis[0]
	q := mustEQn(t, ni, 4)
	c := mustCT(t, ni)
	// A second NIInit references the NI again: its first Fini leaves the queues
	// alive.
	if again, err := procs[0].NIInit(IfaceDefault, NIMatching|NIPhysical, PIDAny, nil); err != nil || again != ni {
		t.Fatalf("second NIInit: %v", err)
	}
	if err := ni.Fini(); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Get(); ErrnoOf(err) != EQEmpty {
		t.Fatalf("EQ.Get after a Fini that is not the last: %v, want EQ_EMPTY", err)
	}
	if _, err := c.Get(); err != nil {
		t.Fatalf("CT.Get after a Fini that is not the last: %v", err)
	}
	if err := ni.Fini(); err != nil {
		t.Fatal(err)
	}
	expired, cancel := context.WithCancel(context.Background())
	cancel()
	ctx := rulesCtx(t)
	for _, c2 := range []struct {
		what string
		err  error
	}{
		{"EQ.Get", func() error { _, err := q.Get(); return err }()},
		{"EQ.Wait", func() error { _, err := q.Wait(ctx); return err }()},
		{"EQ.Wait (expired context)", func() error { _, err := q.Wait(expired); return err }()},
		{"EQPoll", func() error { _, _, err := EQPoll(ctx, []*EQ{q}); return err }()},
		{"CT.Get", func() error { _, err := c.Get(); return err }()},
		{"CT.Wait", func() error { _, err := c.Wait(ctx, 1); return err }()},
		{"CTPoll", func() error { _, _, err := CTPoll(ctx, []*CT{c}, []uint64{1}); return err }()},
		{"CT.Set", c.Set(CTEvent{Success: 1})},
		{"CT.Inc", c.Inc(CTEvent{Success: 1})},
		{"CT.CancelTriggered", c.CancelTriggered()},
		{"TriggeredCTInc", TriggeredCTInc(c, CTEvent{Success: 1}, c, 5)},
		{"EQ.Free", q.Free()},
		{"CT.Free", c.Free()},
	} {
		wantErrno(t, c2.what+" after the last NIFini", c2.err, ArgInvalid)
	}
	if _, err := NIHandle(q); ErrnoOf(err) != ArgInvalid {
		t.Errorf("NIHandle of an EQ after the last NIFini: %v, want ARG_INVALID", err)
	}
}

// Process.Close finalizes the NIs, and with them their queues and counters.
func TestRulesNICloseInterruptsWaiters(t *testing.T) {
	nis, procs := rulesJob(t, 2, NIMatching|NIPhysical, PIDAny, nil)
	q := mustEQn(t, nis[0], 4)
	id := make(chan uint64, 1)
	res := make(chan error, 1)
	ctx := rulesCtx(t)
	go func() {
		id <- goroutineID()
		_, err := q.Wait(ctx)
		res <- err
	}()
	waitParked(t, <-id, "select", "eq.pollQueues", 20*time.Second)
	procs[0].Close()
	select {
	case err := <-res:
		wantErrno(t, "EQ.Wait across Process.Close", err, Interrupted)
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter still blocks 10 s after Close")
	}
	_, err := q.Get()
	wantErrno(t, "EQ.Get after Close", err, ArgInvalid)
}
