package portals

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/goportals/goportals/eq"
)

// TestTriggeredPutChain posts a put triggered at threshold 2 of a counter and
// checks it leaves only once two increments happened.
func TestTriggeredPutChain(t *testing.T) {
	nis := newNIs(t, 2, NIMatching|NIPhysical)
	init, tgt := nis[0], nis[1]
	tbuf, tq, _ := target(t, tgt, 64)
	trig, _ := init.CTAlloc()
	done, _ := init.CTAlloc()
	src := make([]byte, 64)
	fill(src, 9)
	m, _ := init.MDBind(MDSpec{Start: src, CT: done, Options: MDEventCTAck})
	dst, _ := tgt.PhysID()
	if err := TriggeredPut(m, 0, 64, CTAckReq, dst, 4, 0x42, 0, 1, 0, trig, 2); err != nil {
		t.Fatal(err)
	}
	if err := trig.Inc(CTEvent{Success: 1}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	if v, _ := done.Get(); v.Success != 0 {
		t.Fatalf("put fired below its threshold: %+v", v)
	}
	if err := trig.Inc(CTEvent{Success: 1}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if v, err := done.Wait(ctx, 1); err != nil || v.Success != 1 {
		t.Fatalf("ack counter %+v, %v", v, err)
	}
	if ev := waitEvent(t, tq); ev.Type != eq.EventPut || !bytes.Equal(tbuf, src) {
		t.Fatalf("target got %+v", ev)
	}
}

// TestTriggeredCTIncCascade fires counter increments in threshold order.
func TestTriggeredCTIncCascade(t *testing.T) {
	nis := newNIs(t, 1, NIMatching|NIPhysical)
	a, _ := nis[0].CTAlloc()
	b, _ := nis[0].CTAlloc()
	if err := TriggeredCTInc(b, CTEvent{Success: 5}, a, 1); err != nil {
		t.Fatal(err)
	}
	if err := TriggeredCTSet(b, CTEvent{Success: 100}, a, 3); err != nil {
		t.Fatal(err)
	}
	a.Set(CTEvent{Success: 3})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if v, err := b.Wait(ctx, 100); err != nil || v.Success != 100 {
		t.Fatalf("b = %+v, %v", v, err)
	}
}
