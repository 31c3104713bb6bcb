package tests

import (
	portals "github.com/goportals/goportals/internal/nic"
)

// ptl / ptl_init: a Portals process over the launcher's runtime (the Go form of
// PtlInit), reference counted like PtlInit.
func callInit(in *interp, r *record, n *Node) error {
	in.mu.Lock()
	var err error
	if in.proc == nil {
		err = protect(func() error {
			p, e := portals.NewProcess(in.rt, nil)
			in.proc = p
			return e
		})
	}
	if err == nil {
		in.prefs++
	}
	in.mu.Unlock()
	return in.expect(r, n, "PtlInit", err)
}

// ptl / ptl_fini: PtlFini returns nothing; the last one closes the process.
func callFini(in *interp, r *record, n *Node) error {
	in.mu.Lock()
	var p *portals.Process
	if in.prefs > 0 {
		if in.prefs--; in.prefs == 0 {
			p, in.proc = in.proc, nil
		}
	}
	in.mu.Unlock()
	if p != nil {
		if err := protect(p.Close); err != nil {
			if _, ok := err.(*panicError); ok {
				return failf(n, "PtlFini: %v", err)
			}
		}
	}
	return nil
}

func callNIInit(in *interp, r *record, n *Node) error {
	lim := r.desired
	var ni *portals.NI
	p := in.process()
	err := protect(func() error {
		var e error
		if p == nil {
			ni, e = portals.NIInit(r.iface, portals.NIOptions(r.niOpt), r.pid, &lim)
		} else {
			ni, e = p.NIInit(r.iface, portals.NIOptions(r.niOpt), r.pid, &lim)
		}
		return e
	})
	if err == nil && ni != nil {
		r.niH = handle{obj: ni}
		r.nis.push(r.niH)
		r.actual = ni.Limits()
		if ni.Logical() && r.desiredMap != nil {
			// As the reference, the map goes in right after PtlNIInit and its
			// return code is not checked.
			m := r.desiredMap
			protect(func() error { return ni.SetMap(m) })
		}
	}
	return in.expect(r, n, "PtlNIInit", err)
}

func callNIFini(in *interp, r *record, n *Node) error {
	ni, err := r.niH.ni()
	if err != nil {
		return err
	}
	err = protect(ni.Fini)
	if err == nil {
		r.nis.pop()
	}
	return in.expect(r, n, "PtlNIFini", err)
}

func callNIStatus(in *interp, r *record, n *Node) error {
	ni, err := r.niH.ni()
	if err != nil {
		return err
	}
	err = protect(func() error { _, e := ni.Status(portals.SR(r.reg)); return e })
	return in.expect(r, n, "PtlNIStatus", err)
}

// callNIHandle is PtlNIHandle on handle=; the NI found becomes the record's NI, as the
// reference writes it into ni_handle. An INVALID handle is passed as a nil *NI.
func callNIHandle(in *interp, r *record, n *Node) error {
	if err := r.anyH.isNumber(); err != nil {
		return err
	}
	h := r.anyH.obj
	if h == nil {
		h = (*portals.NI)(nil)
	}
	var ni *portals.NI
	err := protect(func() error { var e error; ni, e = portals.NIHandle(h); return e })
	if err == nil {
		r.niH = handle{obj: ni}
	}
	return in.expect(r, n, "PtlNIHandle", err)
}

func callGetID(in *interp, r *record, n *Node) error {
	ni, err := r.niH.ni()
	if err != nil {
		return err
	}
	id, err := in.callID(ni)
	if err == nil {
		r.id, r.idLogical = id, ni.Logical()
	}
	return in.expect(r, n, "PtlGetId", err)
}

func callGetUID(in *interp, r *record, n *Node) error {
	ni, err := r.niH.ni()
	if err != nil {
		return err
	}
	var uid portals.UID
	err = protect(func() error { var e error; uid, e = ni.UID(); return e })
	if err == nil {
		r.uid = uid // the reference writes the result into the record's uid
	}
	return in.expect(r, n, "PtlGetUid", err)
}

func callGetMap(in *interp, r *record, n *Node) error {
	ni, err := r.niH.ni()
	if err != nil {
		return err
	}
	err = protect(func() error { _, e := ni.Map(); return e })
	return in.expect(r, n, "PtlGetMap", err)
}

func callSetMap(in *interp, r *record, n *Node) error {
	ni, err := r.niH.ni()
	if err != nil {
		return err
	}
	if r.desiredMap == nil {
		return errSkipf("ptl_set_map outside ompi_rt: no map to set")
	}
	err = protect(func() error { return ni.SetMap(r.desiredMap) })
	return in.expect(r, n, "PtlSetMap", err)
}

func callHandleIsEqual(in *interp, r *record, n *Node) error {
	// PtlHandleIsEqual compares opaque values: a raw number written in the script
	// is compared as the number it is (it can never equal a Go handle).
	a, b := r.handle1.obj, r.handle2.obj
	for _, h := range []struct {
		raw string
		dst *any
	}{{r.handle1.raw, &a}, {r.handle2.raw, &b}} {
		if h.raw != "" {
			v, err := parseNumber(h.raw)
			if err != nil {
				return err
			}
			*h.dst = v
		}
	}
	var err error
	if !portals.HandleIsEqual(a, b) {
		err = portals.Fail
	}
	return in.expect(r, n, "PtlHandleIsEqual", err)
}

func callStartBundle(in *interp, r *record, n *Node) error {
	ni, err := r.niH.ni()
	if err != nil {
		return err
	}
	return in.expect(r, n, "PtlStartBundle", protect(ni.StartBundle))
}

func callEndBundle(in *interp, r *record, n *Node) error {
	ni, err := r.niH.ni()
	if err != nil {
		return err
	}
	return in.expect(r, n, "PtlEndBundle", protect(ni.EndBundle))
}

func callPTAlloc(in *interp, r *record, n *Node) error {
	ni, err := r.niH.ni()
	if err != nil {
		return err
	}
	q, err := r.eqH.eq()
	if err != nil {
		return err
	}
	var idx portals.PTIndex
	err = protect(func() error {
		var e error
		idx, e = ni.PTAlloc(portals.PTOptions(r.ptOpt), q, r.ptIndex)
		return e
	})
	if err == nil {
		r.ptIndex = idx
		if r.ptNext < stackSize {
			r.ptIdx[r.ptNext] = idx
			r.ptNext++
		}
	}
	return in.expect(r, n, "PtlPTAlloc", err)
}

func callPTFree(in *interp, r *record, n *Node) error {
	ni, err := r.niH.ni()
	if err != nil {
		return err
	}
	err = in.retryWhile(portals.PTInUse, 0, 0, func() error { return ni.PTFree(r.ptIndex) })
	if err == nil && r.ptNext > 0 {
		r.ptNext--
	}
	return in.expect(r, n, "PtlPTFree", err)
}

func callPTDisable(in *interp, r *record, n *Node) error {
	ni, err := r.niH.ni()
	if err != nil {
		return err
	}
	return in.expect(r, n, "PtlPTDisable", protect(func() error { return ni.PTDisable(r.ptIndex) }))
}

func callPTEnable(in *interp, r *record, n *Node) error {
	ni, err := r.niH.ni()
	if err != nil {
		return err
	}
	return in.expect(r, n, "PtlPTEnable", protect(func() error { return ni.PTEnable(r.ptIndex) }))
}
