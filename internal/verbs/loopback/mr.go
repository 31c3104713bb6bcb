package loopback

import (
	"unsafe"

	"github.com/goportals/goportals/internal/verbs"
)

// mr is a registered region. Its fields are guarded by wire.mu; the key values and
// addr/len are immutable after registration.
type mr struct {
	pd         *pd
	mem        []byte // nil once deregistered
	addr       uint64
	size       int
	access     verbs.Access
	lkey, rkey uint32
	slot       int
}

// addrOf returns the virtual address of mem[0].
func addrOf(mem []byte) uint64 { return uint64(uintptr(unsafe.Pointer(unsafe.SliceData(mem)))) }

// LKey returns the local key.
func (m *mr) LKey() uint32 { return m.lkey }

// RKey returns the remote key.
func (m *mr) RKey() uint32 { return m.rkey }

// Addr returns the virtual address of the first byte.
func (m *mr) Addr() uint64 { return m.addr }

// Len returns the length in bytes (unchanged by Dereg).
func (m *mr) Len() int { return m.size }

// Access returns the rights granted.
func (m *mr) Access() verbs.Access { return m.access }

// Dereg deregisters the region. No work request executing afterwards can touch its
// memory: every execution runs under wire.mu, which Dereg takes.
func (m *mr) Dereg() error {
	wire.mu.Lock()
	defer wire.mu.Unlock()
	if m.mem == nil {
		return verbs.Errorf("dereg mr", verbs.ErrClosed, nil)
	}
	m.release()
	return nil
}

// release drops the region from its context's table. Called with wire.mu held.
func (m *mr) release() {
	if m.mem == nil {
		return
	}
	m.pd.ctx.mrs.remove(m)
	m.pd.nmr--
	m.mem = nil
}

// span returns the bytes [addr, addr+n) of the region, or false when they fall outside it.
func (m *mr) span(addr uint64, n uint32) ([]byte, bool) {
	if m.mem == nil || addr < m.addr {
		return nil, false
	}
	off := addr - m.addr
	size := uint64(len(m.mem))
	if off > size || uint64(n) > size-off {
		return nil, false
	}
	return m.mem[off : off+uint64(n)], true
}
