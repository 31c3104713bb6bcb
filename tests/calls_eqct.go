package tests

import (
	"github.com/goportals/goportals/portals"
	"github.com/goportals/goportals/portals/ptl"
)

func callEQAlloc(in *interp, r *record, n *Node) error {
	ni, err := r.niH.ni()
	if err != nil {
		return err
	}
	var q *portals.EQ
	err = protect(func() error { var e error; q, e = ptl.EQAlloc(ni, int(r.eqCount)); return e })
	if err == nil {
		r.eqH = handle{obj: q}
		r.eqs.push(r.eqH)
	}
	return in.expect(r, n, "PtlEQAlloc", err)
}

func callEQFree(in *interp, r *record, n *Node) error {
	q, err := r.eqH.eq()
	if err != nil {
		return err
	}
	err = protect(func() error { return ptl.EQFree(q) })
	if err == nil {
		r.eqs.pop()
	}
	return in.expect(r, n, "PtlEQFree", err)
}

// eventOK reports whether a queue call returned an event (success or EQ_DROPPED).
func eventOK(err error) bool {
	c := portals.ErrnoOf(err)
	return c == portals.OK || c == portals.EQDropped
}

func callEQGet(in *interp, r *record, n *Node) error {
	q, err := r.eqH.eq()
	if err != nil {
		return err
	}
	var ev portals.Event
	err = protect(func() error { var e error; ev, e = ptl.EQGet(q); return e })
	if eventOK(err) {
		r.event = ev
	}
	return in.expect(r, n, "PtlEQGet", err)
}

// callEQWait blocks like PtlEQWait: without a time limit of its own, bounded only by
// the test's deadline.
func callEQWait(in *interp, r *record, n *Node) error {
	q, err := r.eqH.eq()
	if err != nil {
		return err
	}
	var ev portals.Event
	err = protect(func() error { var e error; ev, e = q.Wait(in.ctx); return e })
	if in.ctx.Err() != nil {
		return failf(n, "PtlEQWait: no event before the test deadline")
	}
	if eventOK(err) {
		r.event = ev
	}
	return in.expect(r, n, "PtlEQWait", err)
}

func callEQPoll(in *interp, r *record, n *Node) error {
	q, err := r.eqH.eq()
	if err != nil {
		return err
	}
	var ev portals.Event
	var which int
	err = protect(func() error {
		var e error
		if ms, ok := in.mirrorTimeout(r); ok {
			ev, which, e = ptl.EQPoll([]*portals.EQ{q}, ms)
			return e
		}
		ctx, cancel := in.waitCtx(r)
		defer cancel()
		ev, which, e = portals.Poll(ctx, q)
		return e
	})
	if eventOK(err) {
		r.event = ev
	}
	r.which = int64(uint32(which))
	return in.expect(r, n, "PtlEQPoll", err)
}

func callCTAlloc(in *interp, r *record, n *Node) error {
	ni, err := r.niH.ni()
	if err != nil {
		return err
	}
	var c *portals.CT
	err = protect(func() error { var e error; c, e = ptl.CTAlloc(ni); return e })
	if err == nil {
		r.ctH = handle{obj: c}
		r.cts.push(r.ctH)
	}
	return in.expect(r, n, "PtlCTAlloc", err)
}

func callCTFree(in *interp, r *record, n *Node) error {
	c, err := r.ctH.ct()
	if err != nil {
		return err
	}
	err = protect(func() error { return ptl.CTFree(c) })
	if err == nil {
		r.cts.pop()
	}
	return in.expect(r, n, "PtlCTFree", err)
}

func callCTGet(in *interp, r *record, n *Node) error {
	c, err := r.ctH.ct()
	if err != nil {
		return err
	}
	var v portals.CTEvent
	err = protect(func() error { var e error; v, e = ptl.CTGet(c); return e })
	if err == nil {
		r.ctEvent = v
	}
	return in.expect(r, n, "PtlCTGet", err)
}

// callCTWait blocks like PtlCTWait, bounded only by the test's deadline.
func callCTWait(in *interp, r *record, n *Node) error {
	c, err := r.ctH.ct()
	if err != nil {
		return err
	}
	var v portals.CTEvent
	err = protect(func() error { var e error; v, e = c.Wait(in.ctx, r.ctTest); return e })
	if in.ctx.Err() != nil {
		return failf(n, "PtlCTWait: test %d not reached before the test deadline", r.ctTest)
	}
	if err == nil {
		r.ctEvent = v
	}
	return in.expect(r, n, "PtlCTWait", err)
}

func callCTPoll(in *interp, r *record, n *Node) error {
	c, err := r.ctH.ct()
	if err != nil {
		return err
	}
	var v portals.CTEvent
	var which int
	err = protect(func() error {
		var e error
		if ms, ok := in.mirrorTimeout(r); ok {
			v, which, e = ptl.CTPoll([]*portals.CT{c}, []uint64{r.ctTest}, ms)
			return e
		}
		ctx, cancel := in.waitCtx(r)
		defer cancel()
		v, which, e = portals.PollCT(ctx, []*portals.CT{c}, []uint64{r.ctTest})
		return e
	})
	if err == nil {
		r.ctEvent = v
	}
	r.which = int64(uint32(which))
	return in.expect(r, n, "PtlCTPoll", err)
}

func callCTSet(in *interp, r *record, n *Node) error {
	c, err := r.ctH.ct()
	if err != nil {
		return err
	}
	return in.expect(r, n, "PtlCTSet", protect(func() error { return ptl.CTSet(c, r.ctEvent) }))
}

func callCTInc(in *interp, r *record, n *Node) error {
	c, err := r.ctH.ct()
	if err != nil {
		return err
	}
	return in.expect(r, n, "PtlCTInc", protect(func() error { return ptl.CTInc(c, r.ctEvent) }))
}

func callCTCancelTrig(in *interp, r *record, n *Node) error {
	c, err := r.ctH.ct()
	if err != nil {
		return err
	}
	return in.expect(r, n, "PtlCTCancelTriggered", protect(func() error { return ptl.CTCancelTriggered(c) }))
}

func callTrigCTInc(in *interp, r *record, n *Node) error {
	c, err := r.ctH.ct()
	if err != nil {
		return err
	}
	t, err := r.trigCTH.ct()
	if err != nil {
		return err
	}
	return in.expect(r, n, "PtlTriggeredCTInc",
		protect(func() error { return ptl.TriggeredCTInc(c, r.ctEvent, t, r.threshold) }))
}

func callTrigCTSet(in *interp, r *record, n *Node) error {
	c, err := r.ctH.ct()
	if err != nil {
		return err
	}
	t, err := r.trigCTH.ct()
	if err != nil {
		return err
	}
	return in.expect(r, n, "PtlTriggeredCTSet",
		protect(func() error { return ptl.TriggeredCTSet(c, r.ctEvent, t, r.threshold) }))
}
