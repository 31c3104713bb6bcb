package tests

import (
	"time"

	"github.com/goportals/goportals/me"
	"github.com/goportals/goportals/portals"
	"github.com/goportals/goportals/portals/ptl"
)

// memory returns the memory an MD, LE or ME of the record exposes: the element's
// buffer cut to length= bytes, or with IOVEC length= iovecs of iovec_len bytes laid
// end to end in the buffer (32 by default, as the reference's iovec array).
func (r *record) memory(s entrySpec) (start []byte, iov [][]byte, err error) {
	if s.opts&optIOVEC == 0 {
		if s.length > uint64(len(r.buf)) {
			return nil, nil, errSkipf("length %d beyond the %d-byte buffer has no Go counterpart (a slice cannot reach past its memory)", s.length, len(r.buf))
		}
		return r.buf[:s.length], nil, nil
	}
	count := s.length
	if !s.lengthSet {
		count = iovSize
	}
	if count > iovSize {
		return nil, nil, errSkipf("%d iovecs: the reference's iovec array holds %d", count, iovSize)
	}
	iov = make([][]byte, count)
	for i := range iov {
		lo, hi := uint64(i)*r.iovecLen, uint64(i+1)*r.iovecLen
		if hi > uint64(len(r.buf)) {
			return nil, nil, errSkipf("iovec %d [%d, %d) beyond the %d-byte buffer has no Go counterpart", i, lo, hi, len(r.buf))
		}
		iov[i] = r.buf[lo:hi:hi]
	}
	return nil, iov, nil
}

func callMDBind(in *interp, r *record, n *Node) error {
	ni, err := r.niH.ni()
	if err != nil {
		return err
	}
	spec := portals.MDSpec{Options: portals.MDOptions(r.md.opts &^ optIOVEC)}
	if spec.EQ, err = r.eqH.eq(); err != nil {
		return err
	}
	if spec.CT, err = r.ctH.ct(); err != nil {
		return err
	}
	if spec.Start, spec.Iovecs, err = r.memory(r.md); err != nil {
		return err
	}
	var m *portals.MD
	err = protect(func() error { var e error; m, e = ptl.MDBind(ni, spec); return e })
	if err == nil {
		r.mdH = handle{obj: m}
		r.mds.push(r.mdH)
	}
	return in.expect(r, n, "PtlMDBind", err)
}

// callMDRelease tries three times, 10 ms apart, while the MD is IN_USE (as the
// reference).
func callMDRelease(in *interp, r *record, n *Node) error {
	m, err := r.mdH.md()
	if err != nil {
		return err
	}
	err = in.retryWhile(portals.InUse, 3, 10*time.Millisecond, m.Release)
	if err == nil {
		r.mds.pop()
	}
	return in.expect(r, n, "PtlMDRelease", err)
}

func (r *record) leSpec() (portals.LESpec, error) {
	var s portals.LESpec
	var err error
	if s.CT, err = r.ctH.ct(); err != nil {
		return s, err
	}
	if s.Start, s.Iovecs, err = r.memory(r.le); err != nil {
		return s, err
	}
	s.UID = r.uid
	s.Options = me.Options(r.le.opts &^ optIOVEC)
	return s, nil
}

func (r *record) meSpec() (portals.MESpec, error) {
	var s portals.MESpec
	var err error
	if s.CT, err = r.ctH.ct(); err != nil {
		return s, err
	}
	if s.Start, s.Iovecs, err = r.memory(r.me); err != nil {
		return s, err
	}
	s.UID = r.uid
	s.Options = me.Options(r.me.opts &^ optIOVEC)
	s.MatchID = portals.ProcessID{NID: portals.NIDAny, PID: portals.PIDAny, Rank: portals.RankAny}
	s.MatchBits, s.IgnoreBits, s.MinFree = r.meMatch, r.meIgnore, r.minFree
	return s, nil
}

func callLEAppend(in *interp, r *record, n *Node) error {
	ni, err := r.niH.ni()
	if err != nil {
		return err
	}
	s, err := r.leSpec()
	if err != nil {
		return err
	}
	var e *portals.LE
	err = protect(func() error { var x error; e, x = ptl.LEAppend(ni, r.ptIndex, s, r.list, r.userPtr); return x })
	if err == nil {
		r.leH = handle{obj: e}
		r.les.push(r.leH)
	}
	return in.expect(r, n, "PtlLEAppend", err)
}

func callMEAppend(in *interp, r *record, n *Node) error {
	ni, err := r.niH.ni()
	if err != nil {
		return err
	}
	s, err := r.meSpec()
	if err != nil {
		return err
	}
	var e *portals.ME
	err = protect(func() error { var x error; e, x = ptl.MEAppend(ni, r.ptIndex, s, r.list, r.userPtr); return x })
	if err == nil {
		r.meH = handle{obj: e}
		r.mes.push(r.meH)
	}
	return in.expect(r, n, "PtlMEAppend", err)
}

// unlink retries while IN_USE, as the reference.
func (in *interp) unlink(r *record, n *Node, h handle, st *stack, op string) error {
	e, err := h.me()
	if err != nil {
		return err
	}
	err = in.retryWhile(portals.InUse, 0, 0, e.Unlink)
	if err == nil {
		st.pop()
	}
	return in.expect(r, n, op, err)
}

func callLEUnlink(in *interp, r *record, n *Node) error {
	return in.unlink(r, n, r.leH, &r.les, "PtlLEUnlink")
}

func callMEUnlink(in *interp, r *record, n *Node) error {
	return in.unlink(r, n, r.meH, &r.mes, "PtlMEUnlink")
}

func callLESearch(in *interp, r *record, n *Node) error {
	ni, err := r.niH.ni()
	if err != nil {
		return err
	}
	s, err := r.leSpec()
	if err != nil {
		return err
	}
	return in.expect(r, n, "PtlLESearch",
		protect(func() error { return ptl.LESearch(ni, r.ptIndex, s, r.search, r.userPtr) }))
}

func callMESearch(in *interp, r *record, n *Node) error {
	ni, err := r.niH.ni()
	if err != nil {
		return err
	}
	s, err := r.meSpec()
	if err != nil {
		return err
	}
	return in.expect(r, n, "PtlMESearch",
		protect(func() error { return ptl.MESearch(ni, r.ptIndex, s, r.search, r.userPtr) }))
}
