package nic

import (
	"fmt"
	"sync/atomic"

	"github.com/goportals/goportals/md"
)

// MDSpec describes a memory descriptor (ptl_md_t): the memory (Start, or Iovecs,
// or a raw address range: Addr and Length), options, and the event queue and
// counting event of its operations (nil: none).
//
// A raw range is used when Start and Iovecs are nil and Length is not zero. It may
// cover any part of the address space, up to all of it (Addr 0, Length
// math.MaxUint64, as C clients bind PTL_SIZE_MAX); the local offset of an
// operation is then an address relative to Addr. Only the bytes an operation
// touches are accessed and registered; an unmapped address fails that operation
// (an error wrapping md.ErrFault, or an event with NI_SEGV), never the process.
type MDSpec struct {
	Start   []byte
	Iovecs  [][]byte
	Addr    uintptr
	Length  uint64
	Options MDOptions
	EQ      *EQ
	CT      *CT
}

// MD is a bound memory descriptor (ptl_handle_md_t). The library registers its
// memory underneath, lazily and through the pin cache; no key is ever visible.
type MD struct {
	ni       *NI
	mem      md.Memory
	flat     []byte // mem's bytes when it is one Go slice (flatOf), for the eager put path
	opts     MDOptions
	eq       *EQ
	ct       *CT
	inflight int         // operations not yet complete (guarded by ni.mu)
	released atomic.Bool // set under ni.mu; read without it by the lock-free start of a put without ack
}

const mdOptionsAll = MDEventSuccessDisable | MDEventCTSend | MDEventCTReply | MDEventCTAck |
	MDEventCTBytes | MDUnordered | MDEventSendDisable | MDVolatile

// MDBind binds memory to a descriptor (PtlMDBind).
func (ni *NI) MDBind(s MDSpec) (*MD, error) {
	const op = "PtlMDBind"
	if err := ni.check(op); err != nil {
		return nil, err
	}
	if s.Options&^mdOptionsAll != 0 {
		return nil, opErr(op, ArgInvalid, fmt.Errorf("options %#x", uint32(s.Options)))
	}
	if (s.EQ != nil && s.EQ.ni != ni) || (s.CT != nil && s.CT.ni != ni) {
		return nil, opErr(op, ArgInvalid, fmt.Errorf("event queue or counter of another NI"))
	}
	mem, err := rawOr(s.Start, s.Iovecs, s.Addr, s.Length)
	if err != nil {
		return nil, opErr(op, ArgInvalid, err)
	}
	if s.Iovecs != nil && len(s.Iovecs) > ni.limits.MaxIovecs {
		return nil, opErr(op, ArgInvalid, fmt.Errorf("%d iovecs, max_iovecs is %d", len(s.Iovecs), ni.limits.MaxIovecs))
	}
	ni.mu.Lock()
	defer ni.mu.Unlock()
	if ni.nMD >= ni.limits.MaxMDs {
		return nil, opErr(op, NoSpace, nil)
	}
	ni.nMD++
	return &MD{ni: ni, mem: mem, flat: flatOf(mem), opts: s.Options, eq: s.EQ, ct: s.CT}, nil
}

// flatOf returns the bytes of mem when they are one slice of Go memory (not raw
// memory, which is read and written under fault protection, nor an iovec list of
// several pieces), or nil. Eager puts copy through it directly: md.Memory's
// methods take the memory by value and walk its segments, which costs more than
// the copy of a small message.
func flatOf(mem md.Memory) []byte {
	if mem.IsRaw() || mem.NumSegments() != 1 {
		return nil
	}
	p, err := mem.Slices(0, mem.Len(), nil)
	if err != nil || len(p) != 1 || uint64(len(p[0])) != mem.Len() {
		return nil
	}
	return p[0]
}

// Release unbinds the descriptor (PtlMDRelease); InUse while operations on it are
// outstanding.
func (m *MD) Release() error {
	const op = "PtlMDRelease"
	if m == nil || m.ni == nil {
		return nilHandle(op, "descriptor")
	}
	ni := m.ni
	ni.mu.Lock()
	defer ni.mu.Unlock()
	if m.released.Load() {
		return opErr(op, ArgInvalid, fmt.Errorf("descriptor already released"))
	}
	// Completions that already arrived (an ACK the engine has not handled yet) are
	// handled here first, so only operations truly outstanding make it IN_USE.
	for round := 0; m.inflight > 0 && round < 4; round++ {
		ni.mu.Unlock()
		ni.assist()
		ni.mu.Lock()
		if m.released.Load() {
			return opErr(op, ArgInvalid, fmt.Errorf("descriptor already released"))
		}
	}
	if m.inflight > 0 {
		return opErr(op, InUse, fmt.Errorf("%d operations outstanding", m.inflight))
	}
	m.released.Store(true)
	ni.nMD--
	return nil
}

// Len returns the length of the descriptor's memory.
func (m *MD) Len() uint64 { return m.mem.Len() }
