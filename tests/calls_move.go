package tests

import (
	"github.com/goportals/goportals/portals"
	"github.com/goportals/goportals/portals/ptl"
)

func callPut(in *interp, r *record, n *Node) error {
	m, err := r.mdH.md()
	if err != nil {
		return err
	}
	return in.expect(r, n, "PtlPut", protect(func() error {
		return ptl.Put(m, r.locOffset, r.length, r.ackReq, r.target, r.ptIndex, r.match, r.remOffset,
			r.userPtr, r.hdrData)
	}))
}

func callGet(in *interp, r *record, n *Node) error {
	m, err := r.mdH.md()
	if err != nil {
		return err
	}
	return in.expect(r, n, "PtlGet", protect(func() error {
		return ptl.Get(m, r.locOffset, r.length, r.target, r.ptIndex, r.match, r.remOffset, r.userPtr)
	}))
}

func callAtomic(in *interp, r *record, n *Node) error {
	m, err := r.mdH.md()
	if err != nil {
		return err
	}
	return in.expect(r, n, "PtlAtomic", protect(func() error {
		return ptl.Atomic(m, r.locOffset, r.length, r.ackReq, r.target, r.ptIndex, r.match, r.remOffset,
			r.userPtr, r.hdrData, r.atomOp, r.typ)
	}))
}

func callAtomicSync(in *interp, r *record, n *Node) error {
	return in.expect(r, n, "PtlAtomicSync", protect(ptl.AtomicSync))
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
		return ptl.FetchAtomic(g, r.locGetOffset, p, r.locPutOffset, r.length, r.target, r.ptIndex, r.match,
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
		return ptl.Swap(g, r.locGetOffset, p, r.locPutOffset, r.length, r.target, r.ptIndex, r.match,
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
		return ptl.TriggeredPut(m, r.locOffset, r.length, r.ackReq, r.target, r.ptIndex, r.match, r.remOffset,
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
		return ptl.TriggeredGet(m, r.locOffset, r.length, r.target, r.ptIndex, r.match, r.remOffset,
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
		return ptl.TriggeredAtomic(m, r.locOffset, r.length, r.ackReq, r.target, r.ptIndex, r.match,
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
		return ptl.TriggeredFetchAtomic(g, r.locGetOffset, p, r.locPutOffset, r.length, r.target, r.ptIndex,
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
		return ptl.TriggeredSwap(g, r.locGetOffset, p, r.locPutOffset, r.length, r.target, r.ptIndex,
			r.match, r.remOffset, r.userPtr, r.hdrData, operand[:], r.atomOp, r.typ, t, r.threshold)
	}))
}
