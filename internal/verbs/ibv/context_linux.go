//go:build linux && cgo && !noibverbs

package ibv

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"syscall"
	"unsafe"

	"github.com/goportals/goportals/internal/rdmadev"
	"github.com/goportals/goportals/internal/verbs"
)

var errLibSeesNone = errors.New("libibverbs lists no device (sysfs shows an active port, but no user-space driver claims it: is the provider package, e.g. ibverbs-providers, installed?)")

// Linked returns nil: this build links libibverbs.
func Linked() error { return nil }

// device is one entry of ibv_get_device_list.
type device struct{ name string }

func (d device) Name() string                 { return d.name }
func (d device) Open() (verbs.Context, error) { return open(d.name) }

// devices lists the devices libibverbs sees. NULL with ENOSYS (no RDMA in the kernel)
// is zero devices.
func devices() ([]verbs.Device, error) {
	var num, e C.int
	l := C.ptl_get_devices(&num, &e)
	if l == nil {
		if e == 0 || syscall.Errno(e) == syscall.ENOSYS {
			return nil, nil
		}
		return nil, verbs.Errorf("ibv: get device list", verbs.ErrNotSupported, syscall.Errno(e))
	}
	defer C.ibv_free_device_list(l)
	var out []verbs.Device
	for _, d := range unsafe.Slice(l, int(num)) {
		out = append(out, device{name: C.GoString(C.ibv_get_device_name(d))})
	}
	return out, nil
}

// errnoKind maps an errno from libibverbs onto the verbs sentinels.
func errnoKind(e syscall.Errno) error {
	switch e {
	case syscall.EINVAL:
		return verbs.ErrInvalidArgument
	case syscall.ENOSYS, syscall.EOPNOTSUPP, syscall.EPROTONOSUPPORT:
		return verbs.ErrNotSupported
	case syscall.ENODEV, syscall.ENXIO:
		return verbs.ErrNoDevice
	case syscall.EBUSY:
		return verbs.ErrBusy
	}
	return verbs.ErrNoResources
}

func errnoErr(op string, e C.int) error {
	if e < 0 {
		e = -e
	}
	return verbs.Errorf("ibv: "+op, errnoKind(syscall.Errno(e)), syscall.Errno(e))
}

// Context is an open device.
type Context struct {
	mu     sync.Mutex
	ctx    *C.struct_ibv_context
	dev    device
	attr   verbs.DeviceAttr
	closed bool

	port     uint8
	ethernet bool
	lid      uint16
	mtu      uint8 // active MTU, enum ibv_mtu
	gidIndex int
	gid      [16]byte
	rdAtom   uint8 // max_qp_init_rd_atom (as initiator)
	destAtom uint8 // max_qp_rd_atom (as responder)
	odpRC    uint32
	pds      map[*pd]struct{}
	cqs      map[*cq]struct{}
}

var _ verbs.Context = (*Context)(nil)

// open opens name ("" picks the first device with an active port, else the first).
func open(name string) (verbs.Context, error) {
	var num, e C.int
	l := C.ptl_get_devices(&num, &e)
	if l == nil {
		if e == 0 || syscall.Errno(e) == syscall.ENOSYS {
			return nil, verbs.Errorf("ibv: open "+name, verbs.ErrNoDevice, errors.New("no RDMA device (the kernel has no RDMA support loaded)"))
		}
		return nil, errnoErr("get device list", e)
	}
	defer C.ibv_free_device_list(l)
	list := unsafe.Slice(l, int(num))
	if name == "" {
		if dev, _, err := rdmadev.FirstActivePort(); err == nil {
			name = dev
		} else if len(list) > 0 {
			name = C.GoString(C.ibv_get_device_name(list[0]))
		}
	}
	for _, d := range list {
		if C.GoString(C.ibv_get_device_name(d)) != name {
			continue
		}
		ctx := C.ibv_open_device(d)
		if ctx == nil {
			return nil, verbs.Errorf("ibv: open "+name, verbs.ErrNoDevice, errors.New("ibv_open_device failed"))
		}
		c := &Context{ctx: ctx, dev: device{name: name}, pds: map[*pd]struct{}{}, cqs: map[*cq]struct{}{}}
		if err := c.setup(); err != nil {
			C.ibv_close_device(ctx)
			return nil, err
		}
		return c, nil
	}
	return nil, verbs.Errorf("ibv: open "+fmt.Sprintf("%q", name), verbs.ErrNoDevice, nil)
}

// setup reads the device and port attributes, picks the port and GID and finds the
// inline cap.
func (c *Context) setup() error {
	var da C.struct_ibv_device_attr
	if rc := C.ibv_query_device(c.ctx, &da); rc != 0 {
		return errnoErr("query device", rc)
	}
	c.port = 1
	var pa C.struct_ibv_port_attr
	for p := 1; p <= int(da.phys_port_cnt); p++ {
		var a C.struct_ibv_port_attr
		if rc := C.ptl_query_port(c.ctx, C.uint8_t(p), &a); rc != 0 {
			return errnoErr(fmt.Sprintf("query port %d", p), rc)
		}
		if p == 1 {
			pa = a
		}
		if a.state == C.IBV_PORT_ACTIVE {
			c.port, pa = uint8(p), a
			break
		}
	}
	c.ethernet = pa.link_layer == C.IBV_LINK_LAYER_ETHERNET
	c.lid = uint16(pa.lid)
	c.mtu = uint8(pa.active_mtu)
	if c.mtu < 1 || c.mtu > 5 {
		c.mtu = 1
	}
	if c.ethernet {
		// RoCE: a RoCE v2 GID (IPv4-mapped first), as sysfs describes the table.
		if d, err := rdmadev.Lookup(c.dev.name); err == nil {
			for _, p := range d.Ports {
				if p.Num == int(c.port) {
					if g, ok := p.PreferredGID(); ok {
						c.gidIndex = g.Index
					}
				}
			}
		}
	}
	var gid C.union_ibv_gid
	if rc := C.ibv_query_gid(c.ctx, C.uint8_t(c.port), C.int(c.gidIndex), &gid); rc == 0 {
		c.gid = *(*[16]byte)(unsafe.Pointer(&gid))
	}
	c.rdAtom = uint8(min(int(da.max_qp_init_rd_atom), 16))
	c.destAtom = uint8(min(int(da.max_qp_rd_atom), 16))
	var odp C.uint32_t
	if C.ptl_odp_rc_caps(c.ctx, &odp) == 0 {
		c.odpRC = uint32(odp)
	}
	c.attr = verbs.DeviceAttr{
		MaxMR:      int(da.max_mr),
		MaxMRSize:  uint64(da.max_mr_size),
		MaxQP:      int(da.max_qp),
		MaxQPWR:    int(da.max_qp_wr) - 1, // one slot per queue is kept for the close drain
		MaxSGE:     int(da.max_sge),
		MaxCQE:     int(da.max_cqe),
		MaxMsgSize: uint64(pa.max_msg_sz),
		Atomics:    da.atomic_cap != C.IBV_ATOMIC_NONE,
		PageSize:   os.Getpagesize(),
	}
	c.attr.MaxInline = c.probeInline()
	return nil
}

// probeInline finds the largest inline payload a queue pair accepts: the device
// attributes do not say, creating a queue pair does.
func (c *Context) probeInline() int {
	p := C.ibv_alloc_pd(c.ctx)
	if p == nil {
		return 0
	}
	defer C.ibv_dealloc_pd(p)
	q := C.ibv_create_cq(c.ctx, 2, nil, nil, 0)
	if q == nil {
		return 0
	}
	defer C.ibv_destroy_cq(q)
	for _, want := range []int{1024, 512, 256, 128, 64, 32} {
		var capa C.struct_ibv_qp_cap
		var e C.int
		qp := C.ptl_create_qp(p, q, q, 1, 1, 1, C.uint32_t(want), &capa, &e)
		if qp != nil {
			C.ibv_destroy_qp(qp)
			return int(capa.max_inline_data)
		}
	}
	return 0
}

// Device returns the device the context was opened on.
func (c *Context) Device() verbs.Device { return c.dev }

// Attr returns the device's limits.
func (c *Context) Attr() verbs.DeviceAttr { return c.attr }

// Port returns the port queue pairs use (the first active one, else 1).
func (c *Context) Port() int { return int(c.port) }

// GIDIndex returns the source GID index queue pairs use (RoCE: the preferred RoCE v2 GID).
func (c *Context) GIDIndex() int { return c.gidIndex }

// ODP reports whether the device offers on-demand paging for RC queue pairs with
// the operations every registration needs (SEND, RECV, WRITE, READ): registrations
// then pin nothing. Regions with remote atomic rights use it only when the device
// also pages for atomics.
func (c *Context) ODP() bool { return c.odpFor(0) }

// odpFor reports whether a region with rights a can be registered on demand.
func (c *Context) odpFor(a verbs.Access) bool {
	need := uint32(C.IBV_ODP_SUPPORT_SEND | C.IBV_ODP_SUPPORT_RECV | C.IBV_ODP_SUPPORT_WRITE | C.IBV_ODP_SUPPORT_READ)
	if a&verbs.AccessRemoteAtomic != 0 {
		need |= C.IBV_ODP_SUPPORT_ATOMIC
	}
	return c.odpRC&need == need
}

// AllocPD allocates a protection domain.
func (c *Context) AllocPD() (verbs.PD, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, verbs.Errorf("ibv: alloc pd", verbs.ErrClosed, nil)
	}
	p := C.ibv_alloc_pd(c.ctx)
	if p == nil {
		return nil, verbs.Errorf("ibv: alloc pd", verbs.ErrNoResources, nil)
	}
	d := &pd{ctx: c, pd: p, mrs: map[*mr]struct{}{}, qps: map[*qp]struct{}{}}
	c.pds[d] = struct{}{}
	return d, nil
}

// Close destroys the context and everything under it.
func (c *Context) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return verbs.Errorf("ibv: close context", verbs.ErrClosed, nil)
	}
	c.closed = true
	for d := range c.pds {
		for q := range d.qps {
			q.destroyLocked(false)
		}
		for m := range d.mrs {
			m.deregLocked()
		}
		d.closed = true
		C.ibv_dealloc_pd(d.pd)
	}
	clear(c.pds)
	for q := range c.cqs {
		q.destroyLocked()
	}
	clear(c.cqs)
	if rc := C.ibv_close_device(c.ctx); rc != 0 {
		return errnoErr("close device", rc)
	}
	return nil
}

// newPSN returns a random 24-bit packet sequence number.
func newPSN() uint32 { return rand.Uint32() & 0xffffff }
