//go:build linux && cgo && !noibverbs

package ibv

/*
#include "shim.h"
*/
import "C"

import (
	"syscall"
	"unsafe"

	"github.com/goportals/goportals/internal/verbs"
)

// pd is a protection domain.
type pd struct {
	ctx    *Context
	pd     *C.struct_ibv_pd
	closed bool
	mrs    map[*mr]struct{}
	qps    map[*qp]struct{}
}

// mr is a registered region. It keeps mem referenced so Go memory stays alive (the
// Go heap does not move objects) while the HCA may touch it.
type mr struct {
	pd     *pd
	mr     *C.struct_ibv_mr
	mem    []byte
	access verbs.Access
	addr   uint64
	lkey   uint32
	rkey   uint32
	closed bool
}

// accessFlags maps verbs rights onto ibv_access_flags.
func accessFlags(a verbs.Access) C.int {
	var f C.int
	if a&verbs.AccessLocalWrite != 0 {
		f |= C.IBV_ACCESS_LOCAL_WRITE
	}
	if a&verbs.AccessRemoteWrite != 0 {
		f |= C.IBV_ACCESS_REMOTE_WRITE
	}
	if a&verbs.AccessRemoteRead != 0 {
		f |= C.IBV_ACCESS_REMOTE_READ
	}
	if a&verbs.AccessRemoteAtomic != 0 {
		f |= C.IBV_ACCESS_REMOTE_ATOMIC
	}
	return f
}

// RegMR registers mem, with on-demand paging when the device offers it.
func (d *pd) RegMR(mem []byte, access verbs.Access) (verbs.MR, error) {
	if err := access.Validate(); err != nil {
		return nil, verbs.Errorf("ibv: reg mr", err, nil)
	}
	if len(mem) == 0 {
		return nil, verbs.Errorf("ibv: reg mr", verbs.ErrInvalidArgument, nil)
	}
	c := d.ctx
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || d.closed {
		return nil, verbs.Errorf("ibv: reg mr", verbs.ErrClosed, nil)
	}
	flags := accessFlags(access)
	if c.odpFor(access) {
		flags |= C.IBV_ACCESS_ON_DEMAND
	}
	addr := uint64(uintptr(unsafe.Pointer(&mem[0])))
	var e C.int
	r := C.ptl_reg_mr(d.pd, C.uint64_t(addr), C.uint64_t(len(mem)), flags, &e)
	if r == nil {
		kind := errnoKind(syscall.Errno(e))
		switch syscall.Errno(e) {
		case syscall.ENOMEM, syscall.EPERM, syscall.EAGAIN, syscall.EFAULT:
			// Pinning refused: RLIMIT_MEMLOCK (or memory the kernel cannot pin).
			kind = verbs.ErrMemlock
		}
		return nil, verbs.Errorf("ibv: reg mr", kind, syscall.Errno(e))
	}
	m := &mr{pd: d, mr: r, mem: mem, access: access, addr: addr, lkey: uint32(r.lkey), rkey: uint32(r.rkey)}
	d.mrs[m] = struct{}{}
	return m, nil
}

func (m *mr) LKey() uint32         { return m.lkey }
func (m *mr) RKey() uint32         { return m.rkey }
func (m *mr) Addr() uint64         { return m.addr }
func (m *mr) Len() int             { return len(m.mem) }
func (m *mr) Access() verbs.Access { return m.access }

// Dereg deregisters the region.
func (m *mr) Dereg() error {
	c := m.pd.ctx
	c.mu.Lock()
	defer c.mu.Unlock()
	if m.closed {
		return verbs.Errorf("ibv: dereg mr", verbs.ErrClosed, nil)
	}
	return m.deregLocked()
}

func (m *mr) deregLocked() error {
	m.closed = true
	delete(m.pd.mrs, m)
	rc := C.ibv_dereg_mr(m.mr)
	m.mem = nil
	if rc != 0 {
		return errnoErr("dereg mr", rc)
	}
	return nil
}

// Close deallocates the PD; it fails with ErrBusy while regions or queue pairs remain.
func (d *pd) Close() error {
	c := d.ctx
	c.mu.Lock()
	defer c.mu.Unlock()
	if d.closed {
		return verbs.Errorf("ibv: close pd", verbs.ErrClosed, nil)
	}
	if len(d.mrs)+len(d.qps) > 0 {
		return verbs.Errorf("ibv: close pd", verbs.ErrBusy, nil)
	}
	d.closed = true
	delete(c.pds, d)
	if rc := C.ibv_dealloc_pd(d.pd); rc != 0 {
		return errnoErr("dealloc pd", rc)
	}
	return nil
}
