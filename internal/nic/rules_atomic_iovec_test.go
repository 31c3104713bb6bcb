package nic

import (
	"bytes"
	"testing"

	"github.com/goportals/goportals/eq"
)

// iovecs returns n separately allocated segments of size bytes each.
func iovecs(n, size int) [][]byte {
	iov := make([][]byte, n)
	for i := range iov {
		iov[i] = make([]byte, size)
	}
	return iov
}

// TestRulesAtomicIovecLongTransfers: a descriptor of up to max_iovecs segments
// moves data of any length: long puts from it and long gets into it, whole or
// from an offset, with more segments than an inline segment list can name.
func TestRulesAtomicIovecLongTransfers(t *testing.T) {
	for _, c := range []struct {
		name      string
		segs, len int
	}{
		{"100x100B", 100, 100},
		{"100x16KiB", 100, 16 << 10}, // 1.6 MB a side: within an ordinary RLIMIT_MEMLOCK
		{"max_iovecs x 1B", 1 << 16, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			nis := newNIsWith(t, 2, NIMatching|NIPhysical, nil)
			init, tgt := nis[0], nis[1]
			if c.segs > init.Limits().MaxIovecs {
				t.Fatalf("%d segments above max_iovecs %d", c.segs, init.Limits().MaxIovecs)
			}
			total := c.segs * c.len
			tbuf := make([]byte, total)
			tq, _ := ruleTarget(t, tgt, tbuf, nil)
			iq, err := init.EQAlloc(64)
			if err != nil {
				t.Fatal(err)
			}
			src := iovecs(c.segs, c.len)
			for i, s := range src {
				fill(s, byte(i))
			}
			want := bytes.Join(src, nil)
			sm, err := init.MDBind(MDSpec{Iovecs: src, EQ: iq})
			if err != nil {
				t.Fatal(err)
			}
			dst := mustPhysID(t, tgt)
			if err := Put(sm, 0, uint64(total), AckReqFull, dst, 4, 0x42, 0, 1, 0); err != nil {
				t.Fatalf("put of %d bytes from %d segments: %v", total, c.segs, err)
			}
			if ev := waitKind(t, tq, eq.EventPut); ev.MLength != uint64(total) || ev.NIFail != eq.NIOK {
				t.Fatalf("target event %+v", ev)
			}
			if !bytes.Equal(tbuf, want) {
				t.Fatal("the put's data differs")
			}
			got := map[eq.EventKind]Event{}
			for len(got) < 2 {
				ev := waitEvent(t, iq)
				got[ev.Type] = ev
			}
			if a := got[eq.EventAck]; a.MLength != uint64(total) || a.NIFail != eq.NIOK {
				t.Fatalf("ack %+v", a)
			}

			// Get it back into another descriptor of as many segments.
			back := iovecs(c.segs, c.len)
			gm, err := init.MDBind(MDSpec{Iovecs: back, EQ: iq})
			if err != nil {
				t.Fatal(err)
			}
			if err := Get(gm, 0, uint64(total), dst, 4, 0x42, 0, 2); err != nil {
				t.Fatalf("get of %d bytes into %d segments: %v", total, c.segs, err)
			}
			if ev := waitKind(t, iq, eq.EventReply); ev.MLength != uint64(total) || ev.NIFail != eq.NIOK {
				t.Fatalf("reply %+v", ev)
			}
			if !bytes.Equal(bytes.Join(back, nil), want) {
				t.Fatal("the get's data differs")
			}
			waitKind(t, tq, eq.EventGet)

			// From an offset in the middle of a segment, to a remote offset, and a get
			// the target truncates: only mlength bytes land.
			off, roff := uint64(c.len/2+3*c.len), uint64(7)
			n := uint64(total) - max(off, roff) - 1
			for _, s := range back {
				clear(s)
			}
			if err := Get(gm, off, n, dst, 4, 0x42, roff, 3); err != nil {
				t.Fatal(err)
			}
			ev := waitKind(t, iq, eq.EventReply)
			if ev.MLength != n || ev.NIFail != eq.NIOK {
				t.Fatalf("reply %+v, want mlength %d", ev, n)
			}
			flat := bytes.Join(back, nil)
			if !bytes.Equal(flat[off:off+n], want[roff:roff+n]) {
				t.Fatal("the offset get's data differs")
			}
			if bytes.ContainsFunc(flat[:off], func(r rune) bool { return r != 0 }) ||
				bytes.ContainsFunc(flat[off+n:], func(r rune) bool { return r != 0 }) {
				t.Fatal("the offset get wrote outside its range")
			}
			waitKind(t, tq, eq.EventGet)
			trunc := uint64(total) - 5 // remote offset 5: the entry holds total-5 bytes from there
			for _, s := range back {
				clear(s)
			}
			if err := Get(gm, 0, uint64(total), dst, 4, 0x42, 5, 4); err != nil {
				t.Fatal(err)
			}
			if ev := waitKind(t, iq, eq.EventReply); ev.MLength != trunc || ev.NIFail != eq.NIOK {
				t.Fatalf("truncated reply %+v, want mlength %d", ev, trunc)
			}
			flat = bytes.Join(back, nil)
			if !bytes.Equal(flat[:trunc], want[5:]) || bytes.ContainsFunc(flat[trunc:], func(r rune) bool { return r != 0 }) {
				t.Fatal("the truncated get's data differs")
			}
			waitKind(t, tq, eq.EventGet)
			// A long get over few of the segments (named in the request directly).
			if k := uint64(20 * c.len); k > eagerMax {
				for _, s := range back {
					clear(s)
				}
				if err := Get(gm, uint64(c.len), k, dst, 4, 0x42, 0, 5); err != nil {
					t.Fatal(err)
				}
				if ev := waitKind(t, iq, eq.EventReply); ev.MLength != k || ev.NIFail != eq.NIOK {
					t.Fatalf("reply %+v, want mlength %d", ev, k)
				}
				flat = bytes.Join(back, nil)
				if !bytes.Equal(flat[c.len:uint64(c.len)+k], want[:k]) {
					t.Fatal("the 20-segment get's data differs")
				}
				waitKind(t, tq, eq.EventGet)
			}
			waitReleased(t, sm)
			waitReleased(t, gm)
		})
	}
}
