package tests

import (
	portals "github.com/goportals/goportals/internal/nic"
)

func callPut(in *interp, r *record, n *Node) error {
	m, err := r.mdH.md()
	if err != nil {
		return err
	}
	return in.expect(r, n, "PtlPut", protect(func() error {
		return portals.Put(m, r.locOffset, r.length, r.ackReq, r.target, r.ptIndex, r.match, r.remOffset,
			r.userPtr, r.hdrData)
	}))
}

func callGet(in *interp, r *record, n *Node) error {
	m, err := r.mdH.md()
	if err != nil {
		return err
	}
	return in.expect(r, n, "PtlGet", protect(func() error {
		return portals.Get(m, r.locOffset, r.length, r.target, r.ptIndex, r.match, r.remOffset, r.userPtr)
	}))
}

func callAtomic(in *interp, r *record, n *Node) error {
	m, err := r.mdH.md()
	if err != nil {
		return err
	}
	return in.expect(r, n, "PtlAtomic", protect(func() error {
		return portals.Atomic(m, r.locOffset, r.length, r.ackReq, r.target, r.ptIndex, r.match, r.remOffset,
			r.userPtr, r.hdrData, r.atomOp, r.typ)
	}))
}

func callAtomicSync(in *interp, r *record, n *Node) error {
	p := in.process()
	return in.expect(r, n, "PtlAtomicSync", protect(func() error {
		if p == nil {
			return portals.AtomicSync()
		}
		return p.AtomicSync()
	}))
}

// fetchMDs returns the get and put descriptors of a fetch or swap: by default the
// innermost two MDs (get the innermost), as the reference.
func (r *record) fetchMDs() (*portals.MD, *portals.MD, error) {
	g, err := r.getMDH.md()
	if err != nil {
		return nil, nil, err
	}
	p, err := r.putMDH.md()
	return g, p, err
}

func callFetch(in *interp, r *record, n *Node) error {
	g, p, err := r.fetchMDs()
	if err != nil {
		return err
	}
	return in.expect(r, n, "PtlFetchAtomic", protect(func() error {
		return portals.FetchAtomic(g, r.locGetOffset, p, r.locPutOffset, r.length, r.target, r.ptIndex, r.match,
			r.remOffset, r.userPtr, r.hdrData, r.atomOp, r.typ)
	}))
}

func callSwap(in *interp, r *record, n *Node) error {
	g, p, err := r.fetchMDs()
	if err != nil {
		return err
	}
	operand := r.operand
	return in.expect(r, n, "PtlSwap", protect(func() error {
		return portals.Swap(g, r.locGetOffset, p, r.locPutOffset, r.length, r.target, r.ptIndex, r.match,
			r.remOffset, r.userPtr, r.hdrData, operand[:], r.atomOp, r.typ)
	}))
}

// trigger returns the counting event that triggers an operation: ct_handle.
func (r *record) trigger() (*portals.CT, error) {
	return r.ctH.ct()
}

func callTrigPut(in *interp, r *record, n *Node) error {
	m, err := r.mdH.md()
	if err != nil {
		return err
	}
	t, err := r.trigger()
	if err != nil {
		return err
	}
	return in.expect(r, n, "PtlTriggeredPut", protect(func() error {
		return portals.TriggeredPut(m, r.locOffset, r.length, r.ackReq, r.target, r.ptIndex, r.match, r.remOffset,
			r.userPtr, r.hdrData, t, r.threshold)
	}))
}

func callTrigGet(in *interp, r *record, n *Node) error {
	m, err := r.mdH.md()
	if err != nil {
		return err
	}
	t, err := r.trigger()
	if err != nil {
		return err
	}
	return in.expect(r, n, "PtlTriggeredGet", protect(func() error {
		return portals.TriggeredGet(m, r.locOffset, r.length, r.target, r.ptIndex, r.match, r.remOffset,
			r.userPtr, t, r.threshold)
	}))
}

func callTrigAtomic(in *interp, r *record, n *Node) error {
	m, err := r.mdH.md()
	if err != nil {
		return err
	}
	t, err := r.trigger()
	if err != nil {
		return err
	}
	return in.expect(r, n, "PtlTriggeredAtomic", protect(func() error {
		return portals.TriggeredAtomic(m, r.locOffset, r.length, r.ackReq, r.target, r.ptIndex, r.match,
			r.remOffset, r.userPtr, r.hdrData, r.atomOp, r.typ, t, r.threshold)
	}))
}

func callTrigFetch(in *interp, r *record, n *Node) error {
	g, p, err := r.fetchMDs()
	if err != nil {
		return err
	}
	t, err := r.trigger()
	if err != nil {
		return err
	}
	return in.expect(r, n, "PtlTriggeredFetchAtomic", protect(func() error {
		return portals.TriggeredFetchAtomic(g, r.locGetOffset, p, r.locPutOffset, r.length, r.target, r.ptIndex,
			r.match, r.remOffset, r.userPtr, r.hdrData, r.atomOp, r.typ, t, r.threshold)
	}))
}

func callTrigSwap(in *interp, r *record, n *Node) error {
	g, p, err := r.fetchMDs()
	if err != nil {
		return err
	}
	t, err := r.trigger()
	if err != nil {
		return err
	}
	operand := r.operand
	return in.expect(r, n, "PtlTriggeredSwap", protect(func() error {
		return portals.TriggeredSwap(g, r.locGetOffset, p, r.locPutOffset, r.length, r.target, r.ptIndex,
			r.match, r.remOffset, r.userPtr, r.hdrData, operand[:], r.atomOp, r.typ, t, r.threshold)
	}))
}
