package portals

import (
	"github.com/goportals/goportals/internal/nic"
)

// MDSpec describes a memory descriptor (ptl_md_t): the memory (Start, or Iovecs
// for a gather/scatter list, or a raw address range Addr, Length), options, and
// the event queue and counting event of its operations (nil: none).
//
// A raw range is used when Start and Iovecs are nil and Length is not zero; it may
// cover any part of the address space, up to all of it (Addr 0, Length
// ^uint64(0), as C clients bind). Only the bytes a transfer touches are accessed
// and registered, under fault protection: an unmapped address fails that
// operation (NI_SEGV in its events), never the process.
type MDSpec struct {
	Start   []byte
	Iovecs  [][]byte
	Addr    uintptr
	Length  uint64
	Options MDOptions
	EQ      *EQ
	CT      *CT
}

// MD is a bound memory descriptor (ptl_handle_md_t): local memory that
// operations send from or receive into. The library registers it underneath,
// lazily and through the pin cache; no key is ever visible. Compare with ==.
type MD struct {
	ni *NI
	m  *nic.MD
}

// MDBind binds a memory descriptor (PtlMDBind).
func (ni *NI) MDBind(s MDSpec) (*MD, error) {
	if ni == nil || ni.n == nil {
		return nil, errNil("PtlMDBind", "NI")
	}
	if s.EQ.invalid() {
		return nil, errInvalid("PtlMDBind", "event queue")
	}
	if s.CT.invalid() {
		return nil, errInvalid("PtlMDBind", "counting event")
	}
	cs := nic.MDSpec{Start: s.Start, Iovecs: s.Iovecs, Addr: s.Addr, Length: s.Length, Options: nic.MDOptions(s.Options), CT: s.CT.core()}
	if s.EQ != nil {
		cs.EQ = s.EQ.q
	}
	m, err := ni.n.MDBind(cs)
	if err != nil {
		return nil, err
	}
	return &MD{ni: ni, m: m}, nil
}

// NI returns the network interface the descriptor belongs to (PtlNIHandle).
func (m *MD) NI() *NI { return m.ni }

// Len returns the descriptor's length in bytes.
func (m *MD) Len() uint64 { return m.m.Len() }

// Release unbinds the descriptor (PtlMDRelease): InUse while operations on it are
// still in flight.
func (m *MD) Release() error {
	if m == nil || m.m == nil {
		return errNil("PtlMDRelease", "memory descriptor")
	}
	return m.m.Release()
}

func (m *MD) core() *nic.MD {
	if m == nil || m.m == nil {
		return nil
	}
	return m.m
}
