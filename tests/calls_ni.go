package tests

import (
	"github.com/goportals/goportals/portals"
	"github.com/goportals/goportals/portals/ptl"
)

// ptl / ptl_init: PtlInit (ptl.Init). Under the launcher the library joins the job
// through the launcher's shared bootstrap connection, the one the interpreter's
// runtime uses, so logical NIs start with the job's map. Init is reference counted;
// the interpreter counts the Inits it made so that it can end them all at the end.
func callInit(in *interp, r *record, n *Node) error {
	err := protect(ptl.Init)
	if err == nil {
		in.mu.Lock()
		in.prefs++
		in.mu.Unlock()
	}
	return in.expect(r, n, "PtlInit", err)
}

// ptl / ptl_fini: PtlFini (ptl.Fini) returns nothing; the last one finalizes the
// library. A Fini without an Init of this script is not passed on.
func callFini(in *interp, r *record, n *Node) error {
	in.mu.Lock()
	fini := in.prefs > 0
	if fini {
		in.prefs--
	}
	in.mu.Unlock()
	if fini {
		if err := protect(func() error { ptl.Fini(); return nil }); err != nil {
			return failf(n, "PtlFini: %v", err)
		}
	}
	return nil
}

func callNIInit(in *interp, r *record, n *Node) error {
	lim := r.desired
	var ni *portals.NI
	var actual portals.Limits
	err := protect(func() error {
		var e error
		ni, actual, e = ptl.NIInit(r.iface, portals.NIOptions(r.niOpt), r.pid, &lim)
		return e
	})
	if err == nil && ni != nil {
		r.niH = handle{obj: ni}
		r.nis.push(r.niH)
		r.actual = actual
		if ni.Logical() && r.desiredMap != nil {
			// As the reference, the map goes in right after PtlNIInit and its
			// return code is not checked.
			m := r.desiredMap
			protect(func() error { return ptl.SetMap(ni, m) })
		}
	}
	return in.expect(r, n, "PtlNIInit", err)
}

func callNIFini(in *interp, r *record, n *Node) error {
	ni, err := r.niH.ni()
	if err != nil {
		return err
	}
	err = protect(func() error { return ptl.NIFini(ni) })
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
	err = protect(func() error { _, e := ptl.NIStatus(ni, portals.SR(r.reg)); return e })
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
	err := protect(func() error { var e error; ni, e = ptl.NIHandle(h); return e })
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
	err = protect(func() error { var e error; uid, e = ptl.GetUid(ni); return e })
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
	err = protect(func() error { _, e := ptl.GetMap(ni, nil); return e })
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
	err = protect(func() error { return ptl.SetMap(ni, r.desiredMap) })
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
	if !ptl.HandleIsEqual(a, b) {
		err = portals.Fail
	}
	return in.expect(r, n, "PtlHandleIsEqual", err)
}

func callStartBundle(in *interp, r *record, n *Node) error {
	ni, err := r.niH.ni()
	if err != nil {
		return err
	}
	return in.expect(r, n, "PtlStartBundle", protect(func() error { return ptl.StartBundle(ni) }))
}

func callEndBundle(in *interp, r *record, n *Node) error {
	ni, err := r.niH.ni()
	if err != nil {
		return err
	}
	return in.expect(r, n, "PtlEndBundle", protect(func() error { return ptl.EndBundle(ni) }))
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
		idx, e = ptl.PTAlloc(ni, portals.PTOptions(r.ptOpt), q, r.ptIndex)
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
	err = in.retryWhile(portals.PTInUse, 0, 0, func() error { return ptl.PTFree(ni, r.ptIndex) })
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
	return in.expect(r, n, "PtlPTDisable", protect(func() error { return ptl.PTDisable(ni, r.ptIndex) }))
}

func callPTEnable(in *interp, r *record, n *Node) error {
	ni, err := r.niH.ni()
	if err != nil {
		return err
	}
	return in.expect(r, n, "PtlPTEnable", protect(func() error { return ptl.PTEnable(ni, r.ptIndex) }))
}
