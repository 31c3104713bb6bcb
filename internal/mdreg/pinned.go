package mdreg

import (
	"sync/atomic"
	"unsafe"

	"github.com/goportals/goportals/internal/verbs"
	"github.com/goportals/goportals/regcache"
)

// MaxSGELength is the largest length of one SGE or RemoteSegment that a Pinned hands
// out: a piece longer than that is split. It fits the 32-bit length of a verbs SGE and
// equals the providers' largest single transfer (DeviceAttr.MaxMsgSize of soft and
// loopback), so one segment never needs more than one RDMA operation.
const MaxSGELength = 1 << 31

// States of a Pinned.
const (
	pinIdle     = 0 // never pinned
	pinLive     = 1 // holds its registrations (or is an empty pin)
	pinReleased = 2
)

// pinPiece is one contiguous piece of a pinned range and its registration. ptr is a
// real pointer to the piece: for Go memory it keeps the object alive while pinned. The
// cache entry alone would not, when the piece hit an entry created for another object
// of the same pages.
type pinPiece struct {
	ptr unsafe.Pointer
	n   uint64
	reg *regcache.Region[verbs.MR]
}

// addr returns the virtual address of the piece.
func (pc *pinPiece) addr() uint64 { return uint64(uintptr(pc.ptr)) }

// Pinned is a range of bound memory registered for the duration of an operation. It
// is the only way keys leave package md, and only the protocol engine sees it: SGEs
// gives the local scatter-gather list, Remote the segments a peer needs for RDMA READ
// or WRITE. Both list the same bytes in the same order, one entry per contiguous piece
// of the range, split at MaxSGELength, so SGEs()[i] and Remote()[i] describe the same
// bytes.
//
// A Pinned belongs to one goroutine at a time; Release is atomic, so a double release
// is always detected.
type Pinned struct {
	r      *Registry // nil for an empty pin
	pieces []pinPiece
	inline [2]pinPiece
	slices [][]byte // scratch of PinInto: the transfer's pieces
	n      uint64
	state  atomic.Uint32
}

// RemoteSegment names Len bytes at virtual address Addr of a peer's registered memory
// with its remote key, as the target of an RDMA READ or WRITE (verbs.SendWR RemoteAddr
// and RKey).
type RemoteSegment struct {
	Addr uint64
	Len  uint32
	RKey uint32
}

// reset empties p for a new pin, keeping its storage.
func (p *Pinned) reset() {
	clear(p.pieces)
	if cap(p.pieces) > len(p.inline) {
		p.pieces = p.pieces[:0]
	} else {
		p.pieces = p.inline[:0]
	}
	p.r, p.n = nil, 0
}

// Len returns the number of bytes pinned (0 once released).
func (p *Pinned) Len() uint64 {
	if p.state.Load() != pinLive {
		return 0
	}
	return p.n
}

// NumSegments returns the number of entries SGEs and Remote produce (0 once released).
func (p *Pinned) NumSegments() int {
	if p.state.Load() != pinLive {
		return 0
	}
	k := 0
	for i := range p.pieces {
		k += int((p.pieces[i].n + MaxSGELength - 1) / MaxSGELength)
	}
	return k
}

// SGEs appends the local scatter-gather elements of the pinned range (address, length,
// local key), in order, and returns the extended slice. It allocates nothing when dst
// has room. A released Pinned appends nothing.
func (p *Pinned) SGEs(dst []verbs.SGE) []verbs.SGE {
	if p.state.Load() != pinLive {
		return dst
	}
	for i := range p.pieces {
		pc := &p.pieces[i]
		key := pc.reg.Reg().LKey()
		for addr, left := pc.addr(), pc.n; left > 0; {
			l := min(left, MaxSGELength)
			dst = append(dst, verbs.SGE{Addr: addr, Length: uint32(l), LKey: key})
			addr, left = addr+l, left-l
		}
	}
	return dst
}

// Remote appends the remote segments of the pinned range (address, length, remote
// key), in order, for a peer's RDMA READ or WRITE, and returns the extended slice. It
// allocates nothing when dst has room. A released Pinned appends nothing.
func (p *Pinned) Remote(dst []RemoteSegment) []RemoteSegment {
	if p.state.Load() != pinLive {
		return dst
	}
	for i := range p.pieces {
		pc := &p.pieces[i]
		key := pc.reg.Reg().RKey()
		for addr, left := pc.addr(), pc.n; left > 0; {
			l := min(left, MaxSGELength)
			dst = append(dst, RemoteSegment{Addr: addr, Len: uint32(l), RKey: key})
			addr, left = addr+l, left-l
		}
	}
	return dst
}

// Release ends the pin: every registration goes back to the pin cache (which keeps it
// cached, or deregisters it if its pages changed meanwhile). It must be called exactly
// once; a second call returns ErrNotPinned and changes nothing.
func (p *Pinned) Release() error {
	if !p.state.CompareAndSwap(pinLive, pinReleased) {
		return ErrNotPinned
	}
	r := p.r
	if r == nil {
		return nil
	}
	err := r.releasePieces(p)
	p.reset()
	r.state.Add(-1)
	return err
}
