package portals

import (
	"github.com/goportals/goportals/internal/nic"
)

// PT is an allocated portal table entry (a ptl_pt_index_t of one NI): where
// incoming operations for its index find their match or list entries. Compare
// with ==.
type PT struct {
	ni  *NI
	idx PTIndex
}

// PTAlloc allocates the portal table entry req (PTAny: any free one) with opts,
// posting its events to q (PtlPTAlloc). Flow control (PTFlowCtrl) needs an event
// queue (PTEQNeeded without one).
func (ni *NI) PTAlloc(opts PTOptions, q *EQ, req PTIndex) (*PT, error) {
	if ni == nil || ni.n == nil {
		return nil, errNil("PtlPTAlloc", "NI")
	}
	if q.invalid() {
		return nil, errInvalid("PtlPTAlloc", "event queue")
	}
	var cq *nic.EQ
	if q != nil {
		cq = q.q
	}
	idx, err := ni.n.PTAlloc(nic.PTOptions(opts), cq, nic.PTIndex(req))
	if err != nil {
		return nil, err
	}
	p := &PT{ni: ni, idx: PTIndex(idx)}
	ni.mu.Lock()
	if ni.pts == nil {
		ni.pts = map[PTIndex]*PT{}
	}
	ni.pts[p.idx] = p
	ni.mu.Unlock()
	return p, nil
}

// Index returns the entry's portal table index, the one initiators target.
func (p *PT) Index() PTIndex { return p.idx }

// NI returns the network interface the entry belongs to.
func (p *PT) NI() *NI { return p.ni }

// Free releases the entry (PtlPTFree): PTInUse while entries are still attached.
func (p *PT) Free() error {
	if p == nil || p.ni == nil || p.ni.n == nil {
		return errNil("PtlPTFree", "portal table entry")
	}
	if err := p.ni.n.PTFree(nic.PTIndex(p.idx)); err != nil {
		return err
	}
	p.ni.mu.Lock()
	if p.ni.pts[p.idx] == p {
		delete(p.ni.pts, p.idx)
	}
	p.ni.mu.Unlock()
	return nil
}

// Enable re-enables the entry (PtlPTEnable), after flow control disabled it.
func (p *PT) Enable() error {
	if p == nil || p.ni == nil || p.ni.n == nil {
		return errNil("PtlPTEnable", "portal table entry")
	}
	return p.ni.n.PTEnable(nic.PTIndex(p.idx))
}

// Disable disables the entry (PtlPTDisable): new messages are dropped; it returns
// once the messages being processed are done.
func (p *PT) Disable() error {
	if p == nil || p.ni == nil || p.ni.n == nil {
		return errNil("PtlPTDisable", "portal table entry")
	}
	return p.ni.n.PTDisable(nic.PTIndex(p.idx))
}
