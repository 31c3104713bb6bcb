package soft

import (
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/goportals/goportals/internal/verbs"
)

// mr is a registered region: its pages are pinned (see PinMethod), their
// translations snapshotted, and an entry of the shared MR table describes it to
// peers.
type mr struct {
	ctx    *Context
	pd     *pd
	mem    []byte // keeps Go memory alive while registered
	base   unsafe.Pointer
	addr   uint64
	size   uint64 // len(mem), kept after Dereg drops mem
	key    uint32
	access verbs.Access
	pages  [2]uintptr // pinned [start, end)
	pin    pinHandle
	xlate  []uint64 // page-map snapshot at registration (nil when unreadable)
	dead   atomic.Bool
}

// The verbs.MR methods. Local and remote keys are the same value.

func (m *mr) LKey() uint32         { return m.key }
func (m *mr) RKey() uint32         { return m.key }
func (m *mr) Addr() uint64         { return m.addr }
func (m *mr) Len() int             { return len(m.mem) }
func (m *mr) Access() verbs.Access { return m.access }

// bytes returns the n bytes at addr (inside the region: the caller checked). A
// region registered by the pin cache covers whole pages around a Go object, so the
// result may lie partly outside the object's span, which the -race checkptr
// instrumentation would reject although the memory is mapped and pinned. An
// empty range is nil: a TCP scatter list leaves empty elements out, since a nil
// part there means "discard".
//
//go:nocheckptr
func (m *mr) bytes(addr uint64, n uint64) []byte {
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Add(m.base, addr-m.addr)), n)
}

// RegMR pins mem and publishes it in the MR table.
func (p *pd) RegMR(mem []byte, access verbs.Access) (verbs.MR, error) {
	c := p.ctx
	if err := access.Validate(); err != nil {
		return nil, verbs.Errorf("reg_mr", verbs.ErrInvalidArgument, nil)
	}
	if len(mem) == 0 || uint64(len(mem)) > c.Attr().MaxMRSize {
		return nil, verbs.Errorf("reg_mr", verbs.ErrInvalidArgument, nil)
	}
	c.life.RLock()
	defer c.life.RUnlock()
	if c.closed.Load() || p.dead.Load() {
		return nil, verbs.Errorf("reg_mr", verbs.ErrClosed, nil)
	}
	base := unsafe.Pointer(unsafe.SliceData(mem))
	addr := uintptr(base)
	start := addr &^ (pageSize - 1)
	end := (addr + uintptr(len(mem)) + pageSize - 1) &^ (pageSize - 1)
	h, err := c.pinRange(start, end)
	if err != nil {
		return nil, err
	}
	m := &mr{ctx: c, pd: p, mem: mem, base: base, addr: uint64(addr), size: uint64(len(mem)), access: access,
		pages: [2]uintptr{start, end}, pin: h}
	m.xlate = translate(start, int((end-start)/pageSize))

	c.mrMu.Lock()
	if len(c.freeMR) == 0 {
		c.mrMu.Unlock()
		c.unpinRange(h, start, end)
		return nil, verbs.Errorf("reg_mr", verbs.ErrNoResources, nil)
	}
	idx := c.freeMR[len(c.freeMR)-1]
	c.freeMR = c.freeMR[:len(c.freeMR)-1]
	// Generations walk a full cycle of the 20-bit space from a random start by the
	// context's random odd step: unguessable from outside, and no key repeats
	// before the slot is retired at the end of its cycle (see Dereg).
	gen := (c.mrGen[idx] + c.genStep) & genMask
	if gen == 0 {
		gen = (gen + c.genStep) & genMask
	}
	c.mrGen[idx] = gen
	c.mrUses[idx]++
	m.key = gen<<mrIdxBits | idx
	p.nmr++
	c.mrMu.Unlock()

	v, off := c.view, entryOff(idx)
	atomic.StoreUint64(v.u64(off+eAddr), m.addr)
	atomic.StoreUint64(v.u64(off+eLen), uint64(len(mem)))
	atomic.StoreUint32(v.u32(off+eAccess), uint32(access))
	atomic.StoreUint32(v.u32(off+ePD), p.id)
	c.mrs[idx].Store(m)
	atomic.StoreUint32(v.u32(off+eState), mrValid)
	atomic.StoreUint32(v.u32(off+eKey), m.key) // publish last
	return m, nil
}

// genMask is the generation part of a key.
const genMask = 1<<(32-mrIdxBits) - 1

// deregWait bounds how long Dereg waits for accesses in flight (a peer in the middle
// of a cross-memory copy). A peer that died mid-copy leaves its count behind: the
// slot is then quarantined rather than reused.
const deregWait = 2 * time.Second

// Dereg revokes the keys, waits for accesses in flight, and unpins.
func (m *mr) Dereg() error {
	c := m.ctx
	c.life.RLock()
	defer c.life.RUnlock()
	if !m.dead.CompareAndSwap(false, true) {
		return verbs.Errorf("dereg_mr", verbs.ErrClosed, nil)
	}
	m.dereg()
	return nil
}

// dereg does the work of Dereg; the caller holds c.life and won the dead flag.
func (m *mr) dereg() {
	c := m.ctx
	idx := m.key & mrIdxMask
	v, off := c.view, entryOff(idx)
	atomic.StoreUint32(v.u32(off+eKey), 0)
	atomic.StoreUint32(v.u32(off+eState), 0)
	// Progress rounds use regions without holding them (localInRound): the one
	// running now, which may have checked the region before dead was set, ends
	// before we go on; later ones see dead. The wait is on inRound, not on the
	// progress lock: a message handler runs under that lock (PollMessages, which
	// uses no region unheld) and may deregister memory.
	for i := 0; c.inRound.Load(); i++ {
		if i&63 == 63 {
			runtime.Gosched()
		} else {
			cpuPause()
		}
	}
	quarantine := false
	deadline := time.Now().Add(deregWait)
	for i := 0; atomic.LoadInt32(v.i32(off+eInflight)) != 0; i++ {
		if i < 100 {
			cpuPause()
			continue
		}
		if time.Now().After(deadline) {
			quarantine = true
			break
		}
		time.Sleep(50 * time.Microsecond)
	}
	c.mrs[idx].Store(nil)
	c.unpinRange(m.pin, m.pages[0], m.pages[1])
	c.mrMu.Lock()
	if c.mrUses[idx] >= genMask-1 {
		quarantine = true // a full cycle of generations: a new one could repeat an old key
	}
	if !quarantine {
		c.freeMR = append(c.freeMR, idx)
	}
	m.pd.nmr--
	c.mrMu.Unlock()
	m.mem = nil
}

// localInRound resolves a local SGE for a progress round (the caller holds
// c.progMu) without holding the region: the receive path of every message would
// otherwise pay two atomic read-modify-writes on the shared table. Dereg marks the
// region dead before it waits for the progress lock, so a round either sees it dead
// or finishes its copy before the region is unpinned. Only this process's own
// record is consulted: the shared table matters to peers' accesses alone.
func (c *Context) localInRound(key uint32, addr, n uint64, need verbs.Access, pd uint32) ([]byte, bool) {
	m := c.mrs[key&mrIdxMask].Load()
	if m == nil || m.dead.Load() || m.key != key || m.pd.id != pd || m.access&need != need ||
		addr < m.addr || n > m.size || addr-m.addr > m.size-n {
		return nil, false
	}
	return m.bytes(addr, n), true
}

// local resolves a local SGE (or any address range) against this context's table,
// holding the region until release. It returns the bytes.
func (c *Context) local(key uint32, addr, n uint64, need verbs.Access, pd uint32) ([]byte, *int32, bool) {
	inflight, ok := c.view.acquire(key, addr, n, need, pd)
	if !ok {
		return nil, nil, false
	}
	// The shared table is writable by every peer: check the bounds and rights
	// again against this process's own record before touching memory.
	m := c.mrs[key&mrIdxMask].Load()
	if m == nil || m.key != key || m.pd.id != pd || m.access&need != need ||
		addr < m.addr || n > m.size || addr-m.addr > m.size-n {
		release(inflight)
		return nil, nil, false
	}
	return m.bytes(addr, n), inflight, true
}
