package soft

import (
	"encoding/binary"
	"sync/atomic"
	"unsafe"

	"github.com/goportals/goportals/internal/verbs"
)

// Each context publishes one shared segment (a memfd that peers map): a header page
// (identity, the progress sleep word) and the memory-region table that peers consult
// before every remote access.
const (
	segMagic    = 0x676f70746c736674 // "goptlsft"
	segVersion  = 1
	maxMR       = 4096
	mrIdxBits   = 12
	mrIdxMask   = maxMR - 1
	mrEntrySize = 64
	segHdrSize  = 4096
	segSize     = segHdrSize + maxMR*mrEntrySize

	sMagic   = 0
	sVersion = 8
	sPid     = 12
	sNonce   = 16
	sSleep   = 64 // futex word: 1 while the context's progress goroutine sleeps

	// MR table entry fields
	eKey      = 0  // uint32: full key (generation<<12 | index); 0 when free or dying
	eState    = 4  // uint32: mrValid or 0
	eAccess   = 8  // uint32: verbs.Access
	ePD       = 12 // uint32: protection domain id
	eInflight = 16 // int32: accesses in progress (local or by peers)
	eAddr     = 24 // uint64
	eLen      = 32 // uint64

	mrValid = 1
)

// segView interprets a mapped segment (ours or a peer's).
type segView struct{ mem []byte }

func (s segView) u32(off int) *uint32 { return (*uint32)(unsafe.Pointer(&s.mem[off])) }
func (s segView) i32(off int) *int32  { return (*int32)(unsafe.Pointer(&s.mem[off])) }
func (s segView) u64(off int) *uint64 { return (*uint64)(unsafe.Pointer(&s.mem[off])) }

func entryOff(idx uint32) int { return segHdrSize + int(idx)*mrEntrySize }

func (s segView) sleepWord() *uint32 { return s.u32(sSleep) }

func (s segView) init(pid int, nonce uint64) {
	binary.LittleEndian.PutUint32(s.mem[sVersion:], segVersion)
	binary.LittleEndian.PutUint32(s.mem[sPid:], uint32(pid))
	binary.LittleEndian.PutUint64(s.mem[sNonce:], nonce)
	atomic.StoreUint64(s.u64(sMagic), segMagic)
}

func (s segView) valid(pid int, nonce uint64) bool {
	return atomic.LoadUint64(s.u64(sMagic)) == segMagic &&
		binary.LittleEndian.Uint32(s.mem[sVersion:]) == segVersion &&
		binary.LittleEndian.Uint32(s.mem[sPid:]) == uint32(pid) &&
		binary.LittleEndian.Uint64(s.mem[sNonce:]) == nonce
}

// acquire checks that key names a live region of protection domain pd that grants
// need and contains [addr, addr+n), and holds the region against deregistration
// until release. The in-flight count is raised before the checks and the
// deregistering side clears the key before waiting for the count to drop, so one of
// the two always sees the other.
func (s segView) acquire(key uint32, addr, n uint64, need verbs.Access, pd uint32) (*int32, bool) {
	idx := key & mrIdxMask
	off := entryOff(idx)
	inflight := s.i32(off + eInflight)
	atomic.AddInt32(inflight, 1)
	if atomic.LoadUint32(s.u32(off+eKey)) != key || key == 0 ||
		atomic.LoadUint32(s.u32(off+eState)) != mrValid ||
		atomic.LoadUint32(s.u32(off+ePD)) != pd ||
		verbs.Access(atomic.LoadUint32(s.u32(off+eAccess)))&need != need {
		atomic.AddInt32(inflight, -1)
		return nil, false
	}
	start, length := atomic.LoadUint64(s.u64(off+eAddr)), atomic.LoadUint64(s.u64(off+eLen))
	if addr < start || n > length || addr-start > length-n {
		atomic.AddInt32(inflight, -1)
		return nil, false
	}
	return inflight, true
}

func release(inflight *int32) { atomic.AddInt32(inflight, -1) }

// releaseAll releases every hold of hs.
func releaseAll(hs []*int32) {
	for _, h := range hs {
		release(h)
	}
}
