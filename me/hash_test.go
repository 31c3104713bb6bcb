package me

import "testing"

func TestBinTable(t *testing.T) {
	var b binTable
	if b.lookup(1) != nil {
		t.Fatal("lookup in empty table")
	}
	keys := make([]uint64, 0, 3000)
	for i := uint64(0); i < 1000; i++ {
		keys = append(keys, i, (i+1)<<32, ^i) // low bits, high bits, dense high values
	}
	for n, k := range keys {
		s := b.insert(k)
		s.head, s.tail = int32(n), int32(n)
		if b.used*4 > len(b.slots)*3 {
			t.Fatalf("load %d/%d", b.used, len(b.slots))
		}
	}
	for n, k := range keys {
		s := b.lookup(k)
		if s == nil || s.head != int32(n) {
			t.Fatalf("key %#x: %+v", k, s)
		}
	}
	for _, k := range []uint64{1000, 1001 << 32, 1 << 63} {
		if b.lookup(k) != nil {
			t.Fatalf("absent key %#x found", k)
		}
	}
	// Empty all but every tenth bin, sweep: the rest survive, the table shrinks.
	for n, k := range keys {
		if n%10 != 0 {
			b.lookup(k).chain = newChain()
		}
	}
	before := len(b.slots)
	b.sweep(len(keys) / 10)
	if b.len() != len(keys)/10 || len(b.slots) >= before {
		t.Fatalf("after sweep: %d bins in %d slots (was %d)", b.len(), len(b.slots), before)
	}
	for n, k := range keys {
		s := b.lookup(k)
		if (n%10 == 0) != (s != nil) || (s != nil && s.head != int32(n)) {
			t.Fatalf("after sweep key %#x (%d): %+v", k, n, s)
		}
	}
}
