package nic

import (
	"testing"

	"github.com/goportals/goportals/internal/mdreg"
	"github.com/goportals/goportals/internal/verbs"
)

// TestPairSegmentsFromOffset: the requests pairSegments builds from byte off of
// both sides move, byte for byte, what pairing the two lists' bytes in order from
// there would: a cut inside a segment, on a boundary of either side, past an empty
// local segment; too few bytes on either side past the cut is refused.
func TestPairSegmentsFromOffset(t *testing.T) {
	local := []verbs.SGE{{Addr: 1000, Length: 10}, {Addr: 2000, Length: 0}, {Addr: 3000, Length: 30}}
	remote := []mdreg.RemoteSegment{{Addr: 50000, Len: 15, RKey: 1}, {Addr: 60000, Len: 25, RKey: 2}}
	segs := make([]byte, 16*len(remote))
	for i, r := range remote {
		putSeg(segs[16*i:], r)
	}
	// byte i of each side, as an address (local) and key+address (remote).
	laddr := func(i uint64) uint64 {
		for _, s := range local {
			if i < uint64(s.Length) {
				return s.Addr + i
			}
			i -= uint64(s.Length)
		}
		t.Fatalf("local byte %d out of range", i)
		return 0
	}
	raddr := func(i uint64) (uint32, uint64) {
		for _, r := range remote {
			if i < uint64(r.Len) {
				return r.RKey, r.Addr + i
			}
			i -= uint64(r.Len)
		}
		t.Fatalf("remote byte %d out of range", i)
		return 0, 0
	}
	for off := uint64(0); off < 40; off++ {
		for n := uint64(1); off+n <= 40; n++ {
			wrs, ok := pairSegments(local, segs, off, n, verbs.OpRDMARead, 7, 0)
			if !ok {
				t.Fatalf("off %d n %d: refused", off, n)
			}
			i := off
			for _, wr := range wrs {
				ra := wr.RemoteAddr
				for _, sg := range wr.SG {
					for b := uint64(0); b < uint64(sg.Length); b++ {
						key, want := raddr(i)
						if sg.Addr+b != laddr(i) || ra != want || wr.RKey != key {
							t.Fatalf("off %d n %d: byte %d goes %d -> %d/%d, want %d -> %d/%d",
								off, n, i, sg.Addr+b, wr.RKey, ra, laddr(i), key, want)
						}
						i++
						ra++
					}
				}
			}
			if i != off+n {
				t.Fatalf("off %d n %d: %d bytes moved", off, n, i-off)
			}
		}
		if _, ok := pairSegments(local, segs, off, 41-off, verbs.OpRDMARead, 7, 0); ok {
			t.Fatalf("off %d: %d bytes accepted past the end", off, 41-off)
		}
	}
}
