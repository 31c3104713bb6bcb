package portals

import (
	"github.com/goportals/goportals/internal/nic"
)

// MESpec describes a match entry (ptl_me_t): the memory it exposes (Start, or
// Iovecs), its counting event, the user allowed (UIDAny: all), options, the
// initiator it accepts (MatchID, with NIDAny/PIDAny/RankAny wildcards), the match
// and ignore bits, and MinFree for a locally managed entry. As in MDSpec, Addr and
// Length name a raw address range when Start and Iovecs are nil; offsets are then
// relative to Addr and Event.Addr is the address of the data.
//
// OnUnlink, when not nil, is called once if the engine unlinks the entry itself
// (use-once, min_free), whether or not an AUTO_UNLINK event is posted; it is not
// called for Unlink. It runs under the engine's lock: it must return quickly and
// must not call into the NI.
type MESpec struct {
	Start      []byte
	Iovecs     [][]byte
	Addr       uintptr
	Length     uint64
	CT         *CT
	UID        UID
	Options    MEOptions
	MatchID    ProcessID
	MatchBits  MatchBits
	IgnoreBits MatchBits
	MinFree    uint64
	OnUnlink   func()
}

// LESpec describes a list entry (ptl_le_t), the entry of an NI without matching.
type LESpec struct {
	Start    []byte
	Iovecs   [][]byte
	Addr     uintptr // a raw range, as in MESpec
	Length   uint64
	CT       *CT
	UID      UID
	Options  MEOptions
	OnUnlink func() // as in MESpec
}

// ME is an appended match or list entry (ptl_handle_me_t, ptl_handle_le_t).
// Compare with ==.
type ME struct {
	ni *NI
	e  *nic.ME
}

// LE is a list entry: the same handle as a match entry.
type LE = ME

func (s MESpec) core() nic.MESpec {
	return nic.MESpec{Start: s.Start, Iovecs: s.Iovecs, Addr: s.Addr, Length: s.Length, CT: s.CT.core(), UID: s.UID, Options: s.Options,
		MatchID: s.MatchID, MatchBits: s.MatchBits, IgnoreBits: s.IgnoreBits, MinFree: s.MinFree, OnUnlink: s.OnUnlink}
}

func (s LESpec) core() nic.LESpec {
	return nic.LESpec{Start: s.Start, Iovecs: s.Iovecs, Addr: s.Addr, Length: s.Length, CT: s.CT.core(), UID: s.UID, Options: s.Options,
		OnUnlink: s.OnUnlink}
}

// Append appends a match entry to list of a matching NI's entry (PtlMEAppend).
// cookie comes back in the entry's events (Event.UserPtr). Appending to the
// priority list first searches the unexpected headers: a match is delivered at
// once, as an overflow event.
func (p *PT) Append(s MESpec, list List, cookie uint64) (*ME, error) {
	if p == nil || p.ni == nil || p.ni.n == nil {
		return nil, errNil("PtlMEAppend", "portal table entry")
	}
	if s.CT.invalid() {
		return nil, errInvalid("PtlMEAppend", "counting event")
	}
	e, err := p.ni.n.MEAppend(nic.PTIndex(p.idx), s.core(), list, cookie)
	if err != nil {
		return nil, err
	}
	return &ME{ni: p.ni, e: e}, nil
}

// AppendLE appends a list entry to list of a non-matching NI's entry (PtlLEAppend).
func (p *PT) AppendLE(s LESpec, list List, cookie uint64) (*LE, error) {
	if p == nil || p.ni == nil || p.ni.n == nil {
		return nil, errNil("PtlLEAppend", "portal table entry")
	}
	if s.CT.invalid() {
		return nil, errInvalid("PtlLEAppend", "counting event")
	}
	e, err := p.ni.n.LEAppend(nic.PTIndex(p.idx), s.core(), list, cookie)
	if err != nil {
		return nil, err
	}
	return &ME{ni: p.ni, e: e}, nil
}

// Search searches the unexpected headers of a matching NI's entry for those s
// matches (PtlMESearch): SearchOnly reports them, SearchDelete reports and removes
// them, each as an EventSearch carrying cookie.
func (p *PT) Search(s MESpec, op SearchOp, cookie uint64) error {
	if p == nil || p.ni == nil || p.ni.n == nil {
		return errNil("PtlMESearch", "portal table entry")
	}
	if s.CT.invalid() {
		return errInvalid("PtlMESearch", "counting event")
	}
	return p.ni.n.MESearch(nic.PTIndex(p.idx), s.core(), op, cookie)
}

// SearchLE is Search on a non-matching NI (PtlLESearch).
func (p *PT) SearchLE(s LESpec, op SearchOp, cookie uint64) error {
	if p == nil || p.ni == nil || p.ni.n == nil {
		return errNil("PtlLESearch", "portal table entry")
	}
	if s.CT.invalid() {
		return errInvalid("PtlLESearch", "counting event")
	}
	return p.ni.n.LESearch(nic.PTIndex(p.idx), s.core(), op, cookie)
}

// NI returns the network interface the entry belongs to (PtlNIHandle).
func (m *ME) NI() *NI { return m.ni }

// Unlink removes the entry (PtlMEUnlink, PtlLEUnlink): InUse while a message is
// being delivered into it.
func (m *ME) Unlink() error {
	if m == nil || m.e == nil {
		return errNil("PtlMEUnlink", "match entry")
	}
	return m.e.Unlink()
}
