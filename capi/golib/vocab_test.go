//go:build cgo

package main

import (
	"testing"

	"github.com/goportals/goportals/portals"
)

// TestVocabulary: every value the forwarding passes by number is the same in
// portals4.h and in package portals.
func TestVocabulary(t *testing.T) {
	for _, p := range vocabulary() {
		if p.c != p.gov {
			t.Errorf("%s is %#x in portals4.h but %#x in package portals", p.name, p.c, p.gov)
		}
	}
}

// TestProcessIDLayout: packID and unpackID read and write ptl_process_t as C
// lays it out, for both addressings.
func TestProcessIDLayout(t *testing.T) {
	phys, logical := packedIDs(0x11223344, 0x55667788, 0x0a0b0c0d)
	id := portals.ProcessID{NID: 0x11223344, PID: 0x55667788}
	if got := packID(id, false); got != phys {
		t.Errorf("packID(%+v, physical) = %#x, C lays it out as %#x", id, got, phys)
	}
	if got := unpackID(phys, false); got != id {
		t.Errorf("unpackID(%#x, physical) = %+v, want %+v", phys, got, id)
	}
	r := portals.ProcessID{Rank: 0x0a0b0c0d}
	if got := packID(r, true); got != logical {
		t.Errorf("packID(%+v, logical) = %#x, C lays it out as %#x", r, got, logical)
	}
	if got := unpackID(logical, true); got != r {
		t.Errorf("unpackID(%#x, logical) = %+v, want %+v", logical, got, r)
	}
}
