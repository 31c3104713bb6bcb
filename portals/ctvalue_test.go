package portals_test

import (
	"errors"
	"testing"
	"unsafe"

	"github.com/goportals/goportals/portals"
)

// readCell reads a ptl_ct_event_t at addr as C code does.
func readCell(addr uintptr) portals.CTEvent {
	// The memory is outside the Go heap: converting the address is safe.
	w := *(**[2]uint64)(unsafe.Pointer(&addr))
	return portals.CTEvent{Success: w[0], Failure: w[1]}
}

// The counter's value is readable in place at ValueAddr, which follows every update
// and is refused once the counter is gone.
func TestCTValueAddr(t *testing.T) {
	ni, _, _, _, done := setup()
	defer done()
	ct, err := ni.CTAlloc()
	if err != nil {
		t.Fatal(err)
	}
	addr, err := ct.ValueAddr()
	if err != nil || addr == 0 {
		t.Fatalf("ValueAddr = %#x, %v", addr, err)
	}
	if v := readCell(addr); v != (portals.CTEvent{}) {
		t.Fatalf("a new counter reads %+v in place", v)
	}
	if err := ct.Inc(portals.CTEvent{Success: 5}); err != nil {
		t.Fatal(err)
	}
	if err := ct.Inc(portals.CTEvent{Failure: 2}); err != nil {
		t.Fatal(err)
	}
	if v := readCell(addr); v != (portals.CTEvent{Success: 5, Failure: 2}) {
		t.Fatalf("in place %+v after Inc(5, 0) and Inc(0, 2)", v)
	}
	if err := ct.Set(portals.CTEvent{Success: 9}); err != nil {
		t.Fatal(err)
	}
	if v := readCell(addr); v != (portals.CTEvent{Success: 9}) {
		t.Fatalf("in place %+v after Set(9, 0)", v)
	}
	// A second counter has a value of its own.
	ct2, err := ni.CTAlloc()
	if err != nil {
		t.Fatal(err)
	}
	addr2, _ := ct2.ValueAddr()
	if addr2 == addr || readCell(addr2) != (portals.CTEvent{}) {
		t.Fatalf("second counter at %#x reads %+v (first at %#x)", addr2, readCell(addr2), addr)
	}
	if err := ct.Free(); err != nil {
		t.Fatal(err)
	}
	if _, err := ct.ValueAddr(); !errors.Is(err, portals.ArgInvalid) {
		t.Fatalf("ValueAddr after Free: %v, want ARG_INVALID", err)
	}
	// The freed slot serves the next counter, which starts at zero.
	ct3, err := ni.CTAlloc()
	if err != nil {
		t.Fatal(err)
	}
	if a, _ := ct3.ValueAddr(); readCell(a) != (portals.CTEvent{}) {
		t.Fatalf("a reused cell reads %+v", readCell(a))
	}
	if v, _ := ct3.Get(); v != (portals.CTEvent{}) {
		t.Fatalf("a counter on a reused cell gets %+v", v)
	}
}
