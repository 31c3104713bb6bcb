package nic

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/goportals/goportals/eq"
)

// TestTriggeredPutChain posts a put triggered at threshold 2 of a counter and
// checks it leaves only once two increments happened.
//
// After the first increment, a probe put is fired behind anything that increment
// fired (fired operations are issued in firing order) and goes over the same
// connection: once the probe is acknowledged, a put fired early would already
// have landed at the target.
func TestTriggeredPutChain(t *testing.T) {
	nis := newNIs(t, 2, NIMatching|NIPhysical)
	init, tgt := nis[0], nis[1]
	tbuf, tq, tct := target(t, tgt, 128)
	cts := make([]*CT, 4)
	for i := range cts {
		var err error
		if cts[i], err = init.CTAlloc(); err != nil {
			t.Fatal(err)
		}
	}
	trig, done, probeTrig, probeDone := cts[0], cts[1], cts[2], cts[3]
	src := make([]byte, 64)
	fill(src, 9)
	m, err := init.MDBind(MDSpec{Start: src, CT: done, Options: MDEventCTAck})
	if err != nil {
		t.Fatal(err)
	}
	probe := make([]byte, 64)
	fill(probe, 100)
	pm, err := init.MDBind(MDSpec{Start: probe, CT: probeDone, Options: MDEventCTAck})
	if err != nil {
		t.Fatal(err)
	}
	dst, err := tgt.PhysID()
	if err != nil {
		t.Fatal(err)
	}
	if err := TriggeredPut(m, 0, 64, CTAckReq, dst, 4, 0x42, 0, 1, 0, trig, 2); err != nil {
		t.Fatal(err)
	}
	if err := trig.Inc(CTEvent{Success: 1}); err != nil {
		t.Fatal(err)
	}
	// The probe lands at offset 64 of the target buffer, the chained put at 0.
	if err := TriggeredPut(pm, 0, 64, CTAckReq, dst, 4, 0x42, 64, 2, 0, probeTrig, 1); err != nil {
		t.Fatal(err)
	}
	if err := probeTrig.Inc(CTEvent{Success: 1}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if v, err := probeDone.Wait(ctx, 1); err != nil || v.Success != 1 || v.Failure != 0 {
		t.Fatalf("probe ack counter %+v, %v", v, err)
	}
	if v, err := tct.Get(); err != nil || v.Success != 1 {
		t.Fatalf("target counted %+v (%v) puts after the probe, want 1: the put fired below its threshold", v, err)
	}
	if v, err := done.Get(); err != nil || v.Success != 0 || v.Failure != 0 {
		t.Fatalf("put fired below its threshold: ack counter %+v, %v", v, err)
	}
	if !bytes.Equal(tbuf[:64], make([]byte, 64)) || !bytes.Equal(tbuf[64:], probe) {
		t.Fatalf("target buffer after the probe: %x", tbuf)
	}
	if ev := waitEvent(t, tq); ev.Type != eq.EventPut || ev.RemoteOffset != 64 {
		t.Fatalf("target event %+v, want the probe's PUT", ev)
	}
	if err := trig.Inc(CTEvent{Success: 1}); err != nil {
		t.Fatal(err)
	}
	if v, err := done.Wait(ctx, 1); err != nil || v.Success != 1 || v.Failure != 0 {
		t.Fatalf("ack counter %+v, %v", v, err)
	}
	if ev := waitEvent(t, tq); ev.Type != eq.EventPut || ev.RemoteOffset != 0 || !bytes.Equal(tbuf[:64], src) {
		t.Fatalf("target got %+v, data %x", ev, tbuf[:64])
	}
}

// TestTriggeredCTIncCascade fires counter operations in threshold order: the
// increment at threshold 1 before the set at threshold 3, so b ends at 100 (105
// in the other order).
func TestTriggeredCTIncCascade(t *testing.T) {
	nis := newNIs(t, 1, NIMatching|NIPhysical)
	var cts [3]*CT
	for i := range cts {
		var err error
		if cts[i], err = nis[0].CTAlloc(); err != nil {
			t.Fatal(err)
		}
	}
	a, b, fin := cts[0], cts[1], cts[2]
	if err := TriggeredCTInc(b, CTEvent{Success: 5}, a, 1); err != nil {
		t.Fatal(err)
	}
	if err := TriggeredCTSet(b, CTEvent{Success: 100}, a, 3); err != nil {
		t.Fatal(err)
	}
	if err := a.Set(CTEvent{Success: 3}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := b.Wait(ctx, 100); err != nil {
		t.Fatalf("b never reached 100: %v", err)
	}
	// A trigger at a threshold already reached fires at once, behind the two
	// above in firing order: when it has run, so have they.
	if err := TriggeredCTInc(fin, CTEvent{Success: 1}, a, 3); err != nil {
		t.Fatal(err)
	}
	if _, err := fin.Wait(ctx, 1); err != nil {
		t.Fatalf("the last trigger never ran: %v", err)
	}
	if v, err := b.Get(); err != nil || v.Success != 100 || v.Failure != 0 {
		t.Fatalf("b = %+v, %v; want 100 (increment, then set)", v, err)
	}
}
