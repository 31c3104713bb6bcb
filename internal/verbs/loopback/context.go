package loopback

import (
	"github.com/goportals/goportals/internal/verbs"
)

// devContext is an open loop0 device. Its fields are guarded by wire.mu.
type devContext struct {
	dev    Device
	closed bool
	mrs    keyTable
	pds    map[*pd]struct{}
	cqs    map[*cq]struct{}
	qps    map[*qp]struct{}
}

func newContext(d Device) *devContext {
	return &devContext{
		dev: d,
		mrs: newKeyTable(),
		pds: make(map[*pd]struct{}),
		cqs: make(map[*cq]struct{}),
		qps: make(map[*qp]struct{}),
	}
}

// Device returns loop0.
func (c *devContext) Device() verbs.Device { return c.dev }

// Attr returns the limits of loop0.
func (c *devContext) Attr() verbs.DeviceAttr { return limits }

// AllocPD allocates a protection domain.
func (c *devContext) AllocPD() (verbs.PD, error) {
	wire.mu.Lock()
	defer wire.mu.Unlock()
	if c.closed {
		return nil, verbs.Errorf("alloc pd", verbs.ErrClosed, nil)
	}
	p := &pd{ctx: c}
	c.pds[p] = struct{}{}
	return p, nil
}

// CreateCQ creates a completion queue of exactly entries slots.
func (c *devContext) CreateCQ(entries int) (verbs.CQ, error) {
	if entries <= 0 || entries > limits.MaxCQE {
		return nil, verbs.Errorf("create cq", verbs.ErrInvalidArgument, nil)
	}
	wire.mu.Lock()
	defer wire.mu.Unlock()
	if c.closed {
		return nil, verbs.Errorf("create cq", verbs.ErrClosed, nil)
	}
	q := newCQ(c, entries)
	c.cqs[q] = struct{}{}
	return q, nil
}

// Close destroys the context: queue pairs are closed (their work flushed and their peers
// told), regions deregistered, completion queues closed (waiters return ErrClosed).
func (c *devContext) Close() error {
	wire.mu.Lock()
	defer wire.mu.Unlock()
	if c.closed {
		return verbs.Errorf("close context", verbs.ErrClosed, nil)
	}
	for q := range c.qps {
		q.destroy()
	}
	c.mrs.each(func(m *mr) { m.release() })
	for p := range c.pds {
		p.closed = true
		delete(c.pds, p)
	}
	for q := range c.cqs {
		q.shut()
		delete(c.cqs, q)
	}
	c.closed = true
	return nil
}

// pd is a protection domain. Its fields are guarded by wire.mu.
type pd struct {
	ctx    *devContext
	closed bool
	nmr    int // live regions
	nqp    int // live queue pairs
}

// RegMR registers mem. Nothing is pinned; mem stays referenced until Dereg.
func (p *pd) RegMR(mem []byte, access verbs.Access) (verbs.MR, error) {
	if err := access.Validate(); err != nil {
		return nil, verbs.Errorf("reg mr", verbs.ErrInvalidArgument, err)
	}
	if len(mem) == 0 || uint64(len(mem)) > limits.MaxMRSize {
		return nil, verbs.Errorf("reg mr", verbs.ErrInvalidArgument, nil)
	}
	wire.mu.Lock()
	defer wire.mu.Unlock()
	if p.closed {
		return nil, verbs.Errorf("reg mr", verbs.ErrClosed, nil)
	}
	if p.ctx.mrs.live >= limits.MaxMR {
		return nil, verbs.Errorf("reg mr", verbs.ErrNoResources, nil)
	}
	m := &mr{pd: p, mem: mem, addr: addrOf(mem), size: len(mem), access: access}
	if err := p.ctx.mrs.insert(m); err != nil {
		return nil, err
	}
	p.nmr++
	return m, nil
}

// CreateQP creates an RC queue pair in the init state.
func (p *pd) CreateQP(attr verbs.QPAttr) (verbs.QP, error) {
	const op = "create qp"
	sendWR, recvWR, nsge := attr.MaxSendWR, attr.MaxRecvWR, attr.MaxSGE
	if sendWR == 0 {
		sendWR = defaultQPWR
	}
	if recvWR == 0 {
		recvWR = defaultQPWR
	}
	if nsge == 0 {
		nsge = limits.MaxSGE
	}
	if sendWR < 0 || recvWR < 0 || nsge < 0 || sendWR > limits.MaxQPWR ||
		recvWR > limits.MaxQPWR || nsge > limits.MaxSGE {
		return nil, verbs.Errorf(op, verbs.ErrInvalidArgument, nil)
	}
	scq, ok1 := attr.SendCQ.(*cq)
	rcq, ok2 := attr.RecvCQ.(*cq)
	if !ok1 || !ok2 || scq == nil || rcq == nil {
		return nil, verbs.Errorf(op, verbs.ErrInvalidArgument, errForeignObject)
	}
	wire.mu.Lock()
	defer wire.mu.Unlock()
	if p.closed {
		return nil, verbs.Errorf(op, verbs.ErrClosed, nil)
	}
	if scq.ctx != p.ctx || rcq.ctx != p.ctx {
		return nil, verbs.Errorf(op, verbs.ErrInvalidArgument, errForeignObject)
	}
	if scq.isClosed() || rcq.isClosed() {
		return nil, verbs.Errorf(op, verbs.ErrClosed, nil)
	}
	if len(p.ctx.qps) >= limits.MaxQP {
		return nil, verbs.Errorf(op, verbs.ErrNoResources, nil)
	}
	q := newQP(p, scq, rcq, sendWR, recvWR, nsge)
	p.ctx.qps[q] = struct{}{}
	p.nqp++
	scq.attach(q)
	if rcq != scq {
		rcq.attach(q)
	}
	registerQP(q)
	return q, nil
}

// Close deallocates the PD; ErrBusy while regions or queue pairs remain.
func (p *pd) Close() error {
	wire.mu.Lock()
	defer wire.mu.Unlock()
	if p.closed {
		return verbs.Errorf("close pd", verbs.ErrClosed, nil)
	}
	if p.nmr > 0 || p.nqp > 0 {
		return verbs.Errorf("close pd", verbs.ErrBusy, nil)
	}
	p.closed = true
	delete(p.ctx.pds, p)
	return nil
}
