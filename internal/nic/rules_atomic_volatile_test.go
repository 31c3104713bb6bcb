package nic

import (
	"testing"

	"github.com/goportals/goportals/eq"
)

// TestRulesAtomicVolatileSize: max_volatile_size bounds the length of a put or an
// atomic (fetching or not) from a PTL_MD_VOLATILE descriptor; longer ones are
// ARG_INVALID, and the bound does not apply to other descriptors.
func TestRulesAtomicVolatileSize(t *testing.T) {
	const vmax = 16
	nis := newNIsWith(t, 2, NIMatching|NIPhysical, &Limits{MaxVolatileSize: vmax})
	init, tgt := nis[0], nis[1]
	if got := init.Limits().MaxVolatileSize; got != vmax {
		t.Fatalf("max_volatile_size granted %d, want %d", got, vmax)
	}
	tq, _ := ruleTarget(t, tgt, make([]byte, 256), nil)
	iq, err := init.EQAlloc(64)
	if err != nil {
		t.Fatal(err)
	}
	vol, err := init.MDBind(MDSpec{Start: make([]byte, 64), EQ: iq, Options: MDVolatile})
	if err != nil {
		t.Fatal(err)
	}
	plain, err := init.MDBind(MDSpec{Start: make([]byte, 64), EQ: iq})
	if err != nil {
		t.Fatal(err)
	}
	res, err := init.MDBind(MDSpec{Start: make([]byte, 64), EQ: iq})
	if err != nil {
		t.Fatal(err)
	}
	trig, err := init.CTAlloc()
	if err != nil {
		t.Fatal(err)
	}
	dst := mustPhysID(t, tgt)
	for _, c := range []struct {
		name string
		err  error
	}{
		{"put", Put(vol, 0, vmax+8, NoAckReq, dst, 4, 0x42, 0, 0, 0)},
		{"atomic", Atomic(vol, 0, vmax+8, NoAckReq, dst, 4, 0x42, 0, 0, 0, eq.OpSum, eq.Uint64)},
		{"fetch atomic", FetchAtomic(res, 0, vol, 0, vmax+8, dst, 4, 0x42, 0, 0, 0, eq.OpSum, eq.Uint64)},
		{"swap", Swap(res, 0, vol, 0, vmax+8, dst, 4, 0x42, 0, 0, 0, nil, eq.OpSwap, eq.Uint64)},
		{"triggered put", TriggeredPut(vol, 0, vmax+8, NoAckReq, dst, 4, 0x42, 0, 0, 0, trig, 1)},
		{"triggered atomic", TriggeredAtomic(vol, 0, vmax+8, NoAckReq, dst, 4, 0x42, 0, 0, 0, eq.OpSum, eq.Uint64, trig, 1)},
	} {
		if got := ErrnoOf(c.err); got != ArgInvalid {
			t.Errorf("%s of %d bytes from a volatile MD (max_volatile_size %d): %v, want ARG_INVALID", c.name, vmax+8, vmax, c.err)
		}
	}
	// Up to the limit from the volatile MD, and beyond it from a plain one: accepted.
	if err := Put(vol, 0, vmax, NoAckReq, dst, 4, 0x42, 0, 1, 0); err != nil {
		t.Fatalf("put of max_volatile_size bytes: %v", err)
	}
	waitKind(t, tq, eq.EventPut)
	if err := Atomic(vol, 0, vmax, NoAckReq, dst, 4, 0x42, 0, 2, 0, eq.OpSum, eq.Uint64); err != nil {
		t.Fatalf("atomic of max_volatile_size bytes: %v", err)
	}
	waitKind(t, tq, eq.EventAtomic)
	if err := Put(plain, 0, 64, NoAckReq, dst, 4, 0x42, 0, 3, 0); err != nil {
		t.Fatalf("put of 64 bytes from a plain MD: %v", err)
	}
	waitKind(t, tq, eq.EventPut)
	if err := Atomic(plain, 0, 64, NoAckReq, dst, 4, 0x42, 0, 4, 0, eq.OpSum, eq.Uint64); err != nil {
		t.Fatalf("atomic of 64 bytes from a plain MD: %v", err)
	}
	waitKind(t, tq, eq.EventAtomic)
	// A get into a volatile MD is not bounded: nothing leaves it.
	if err := Get(vol, 0, 64, dst, 4, 0x42, 0, 5); err != nil {
		t.Fatalf("get of 64 bytes into a volatile MD: %v", err)
	}
	waitKind(t, tq, eq.EventGet)
}
