// Package ptl mirrors portals4.h one function for one: PtlPut is ptl.Put with the
// same arguments in the same order, PtlPTAlloc returns a portal table index, and
// handles are package portals' handles. It exists for code ported from C and for
// the C ABI (libportals); Go programs use package portals itself.
//
// Each function is a thin call into package portals and has its semantics, errors
// included; the function's comment names the portals call it makes.
package ptl

import (
	"context"
	"fmt"
	"time"

	"github.com/goportals/goportals/internal/nic"

	"github.com/goportals/goportals/portals"
	"github.com/goportals/goportals/ptlerr"
)

// TimeForever is PTL_TIME_FOREVER: a timeout that never expires.
const TimeForever = ^uint32(0)

// Init is PtlInit (portals.Init).
func Init() error { return portals.Init() }

// Fini is PtlFini (portals.Fini).
func Fini() { portals.Fini() }

// NIInit is PtlNIInit (portals.NIInit).
func NIInit(iface portals.Interface, opts portals.NIOptions, pid portals.PID, desired *portals.Limits) (*portals.NI, portals.Limits, error) {
	ni, err := portals.NIInit(iface, opts, pid, desired)
	if err != nil {
		return nil, portals.Limits{}, err
	}
	return ni, ni.Limits(), nil
}

// NIFini is PtlNIFini (NI.Fini).
func NIFini(ni *portals.NI) error { return ni.Fini() }

// NIStatus is PtlNIStatus (NI.Status).
func NIStatus(ni *portals.NI, sr portals.SR) (uint64, error) { return ni.Status(sr) }

// NIHandle is PtlNIHandle: the NI of any handle (*NI, *PT, *MD, *ME, *EQ, *CT).
func NIHandle(h any) (*portals.NI, error) {
	var ni *portals.NI
	switch v := h.(type) {
	case *portals.NI:
		ni = v
	case *portals.PT:
		if v != nil {
			ni = v.NI()
		}
	case *portals.MD:
		if v != nil {
			ni = v.NI()
		}
	case *portals.ME:
		if v != nil {
			ni = v.NI()
		}
	case *portals.EQ:
		if v != nil {
			ni = v.NI()
		}
	case *portals.CT:
		if v != nil {
			ni = v.NI()
		}
	default:
		return nil, ptlerr.New("PtlNIHandle", portals.ArgInvalid, fmt.Errorf("%T is not a handle", h))
	}
	if ni == nil {
		return nil, nic.NilHandle("PtlNIHandle", "handle")
	}
	if _, err := ni.ID(); err != nil {
		return nil, ptlerr.New("PtlNIHandle", portals.ArgInvalid, err)
	}
	return ni, nil
}

// HandleIsEqual is PtlHandleIsEqual: handles are equal when they name the same
// object (Go's ==).
func HandleIsEqual(a, b any) bool { return a == b }

// GetUid is PtlGetUid (NI.UID).
func GetUid(ni *portals.NI) (portals.UID, error) { return ni.UID() }

// GetId is PtlGetId (NI.ID).
func GetId(ni *portals.NI) (portals.ProcessID, error) { return ni.ID() }

// GetPhysId is PtlGetPhysId (NI.PhysID).
func GetPhysId(ni *portals.NI) (portals.ProcessID, error) { return ni.PhysID() }

// SetMap is PtlSetMap (NI.SetMap).
func SetMap(ni *portals.NI, m []portals.ProcessID) error { return ni.SetMap(m) }

// GetMap is PtlGetMap (NI.Map): it copies up to len(m) entries into m and returns
// the map's full size.
func GetMap(ni *portals.NI, m []portals.ProcessID) (int, error) {
	full, err := ni.Map()
	if err != nil {
		return 0, err
	}
	copy(m, full)
	return len(full), nil
}

// PTAlloc is PtlPTAlloc (NI.PTAlloc), returning the index.
func PTAlloc(ni *portals.NI, opts portals.PTOptions, q *portals.EQ, req portals.PTIndex) (portals.PTIndex, error) {
	p, err := ni.PTAlloc(opts, q, req)
	if err != nil {
		return 0, err
	}
	return p.Index(), nil
}

func pt(op string, ni *portals.NI, idx portals.PTIndex) (*portals.PT, error) {
	if ni == nil {
		return nil, nic.NilHandle(op, "NI handle")
	}
	p, ok := ni.PT(idx)
	if !ok {
		return nil, ptlerr.New(op, portals.ArgInvalid, fmt.Errorf("portal table entry %d not allocated", idx))
	}
	return p, nil
}

// PTFree is PtlPTFree (PT.Free).
func PTFree(ni *portals.NI, idx portals.PTIndex) error {
	p, err := pt("PtlPTFree", ni, idx)
	if err != nil {
		return err
	}
	return p.Free()
}

// PTEnable is PtlPTEnable (PT.Enable).
func PTEnable(ni *portals.NI, idx portals.PTIndex) error {
	p, err := pt("PtlPTEnable", ni, idx)
	if err != nil {
		return err
	}
	return p.Enable()
}

// PTDisable is PtlPTDisable (PT.Disable).
func PTDisable(ni *portals.NI, idx portals.PTIndex) error {
	p, err := pt("PtlPTDisable", ni, idx)
	if err != nil {
		return err
	}
	return p.Disable()
}

// MDBind is PtlMDBind (NI.MDBind).
func MDBind(ni *portals.NI, s portals.MDSpec) (*portals.MD, error) { return ni.MDBind(s) }

// MDRelease is PtlMDRelease (MD.Release).
func MDRelease(m *portals.MD) error { return m.Release() }

// MEAppend is PtlMEAppend (PT.Append).
func MEAppend(ni *portals.NI, idx portals.PTIndex, s portals.MESpec, list portals.List, userPtr uint64) (*portals.ME, error) {
	p, err := pt("PtlMEAppend", ni, idx)
	if err != nil {
		return nil, err
	}
	return p.Append(s, list, userPtr)
}

// MEUnlink is PtlMEUnlink (ME.Unlink).
func MEUnlink(m *portals.ME) error { return m.Unlink() }

// MESearch is PtlMESearch (PT.Search).
func MESearch(ni *portals.NI, idx portals.PTIndex, s portals.MESpec, sop portals.SearchOp, userPtr uint64) error {
	p, err := pt("PtlMESearch", ni, idx)
	if err != nil {
		return err
	}
	return p.Search(s, sop, userPtr)
}

// LEAppend is PtlLEAppend (PT.AppendLE).
func LEAppend(ni *portals.NI, idx portals.PTIndex, s portals.LESpec, list portals.List, userPtr uint64) (*portals.LE, error) {
	p, err := pt("PtlLEAppend", ni, idx)
	if err != nil {
		return nil, err
	}
	return p.AppendLE(s, list, userPtr)
}

// LEUnlink is PtlLEUnlink (LE.Unlink).
func LEUnlink(l *portals.LE) error { return l.Unlink() }

// LESearch is PtlLESearch (PT.SearchLE).
func LESearch(ni *portals.NI, idx portals.PTIndex, s portals.LESpec, sop portals.SearchOp, userPtr uint64) error {
	p, err := pt("PtlLESearch", ni, idx)
	if err != nil {
		return err
	}
	return p.SearchLE(s, sop, userPtr)
}

// EQAlloc is PtlEQAlloc (NI.EQAlloc).
func EQAlloc(ni *portals.NI, count int) (*portals.EQ, error) { return ni.EQAlloc(count) }

// EQFree is PtlEQFree (EQ.Free).
func EQFree(q *portals.EQ) error { return q.Free() }

// EQGet is PtlEQGet (EQ.Get).
func EQGet(q *portals.EQ) (portals.Event, error) { return q.Get() }

// EQWait is PtlEQWait (EQ.Wait with no deadline).
func EQWait(q *portals.EQ) (portals.Event, error) { return q.Wait(context.Background()) }

// timeoutCtx turns a timeout in milliseconds into a context.
func timeoutCtx(ms uint32) (context.Context, context.CancelFunc) {
	if ms == TimeForever {
		return context.WithCancel(context.Background())
	}
	return context.WithTimeout(context.Background(), time.Duration(ms)*time.Millisecond)
}

// EQPoll is PtlEQPoll (portals.Poll) with a timeout in milliseconds
// (TimeForever: none); it returns the event and the index of its queue.
func EQPoll(eqs []*portals.EQ, timeout uint32) (portals.Event, int, error) {
	ctx, cancel := timeoutCtx(timeout)
	defer cancel()
	return portals.Poll(ctx, eqs...)
}

// CTAlloc is PtlCTAlloc (NI.CTAlloc).
func CTAlloc(ni *portals.NI) (*portals.CT, error) { return ni.CTAlloc() }

// CTFree is PtlCTFree (CT.Free).
func CTFree(c *portals.CT) error { return c.Free() }

// CTCancelTriggered is PtlCTCancelTriggered (CT.CancelTriggered).
func CTCancelTriggered(c *portals.CT) error { return c.CancelTriggered() }

// CTGet is PtlCTGet (CT.Get).
func CTGet(c *portals.CT) (portals.CTEvent, error) { return c.Get() }

// CTValueAddr returns where the counter's ptl_ct_event_t lives (portals.CT.ValueAddr):
// the C ABI's PtlCTGet reads it there.
func CTValueAddr(c *portals.CT) (uintptr, error) { return c.ValueAddr() }

// CTWait is PtlCTWait (CT.Wait with no deadline).
func CTWait(c *portals.CT, test uint64) (portals.CTEvent, error) {
	return c.Wait(context.Background(), test)
}

// CTPoll is PtlCTPoll (portals.PollCT) with a timeout in milliseconds.
func CTPoll(cts []*portals.CT, tests []uint64, timeout uint32) (portals.CTEvent, int, error) {
	ctx, cancel := timeoutCtx(timeout)
	defer cancel()
	return portals.PollCT(ctx, cts, tests)
}

// CTSet is PtlCTSet (CT.Set).
func CTSet(c *portals.CT, v portals.CTEvent) error { return c.Set(v) }

// CTInc is PtlCTInc (CT.Inc).
func CTInc(c *portals.CT, v portals.CTEvent) error { return c.Inc(v) }

func target(id portals.ProcessID, pt portals.PTIndex, match, roff uint64) portals.Target {
	return portals.Target{ID: id, PT: pt, Match: match, Offset: roff}
}

// Put is PtlPut (Span.Put).
func Put(m *portals.MD, localOffset, length uint64, ack portals.AckReq, tgt portals.ProcessID, pt portals.PTIndex,
	match, remoteOffset, userPtr, hdrData uint64) error {
	return m.Span(localOffset, length).Put(target(tgt, pt, match, remoteOffset),
		portals.OpOptions{Ack: ack, HdrData: hdrData, Cookie: userPtr})
}

// Get is PtlGet (Span.Get).
func Get(m *portals.MD, localOffset, length uint64, tgt portals.ProcessID, pt portals.PTIndex,
	match, remoteOffset, userPtr uint64) error {
	return m.Span(localOffset, length).Get(target(tgt, pt, match, remoteOffset), portals.OpOptions{Cookie: userPtr})
}

// Atomic is PtlAtomic (Span.Atomic).
func Atomic(m *portals.MD, localOffset, length uint64, ack portals.AckReq, tgt portals.ProcessID, pt portals.PTIndex,
	match, remoteOffset, userPtr, hdrData uint64, op portals.AtomicOp, dt portals.AtomicType) error {
	return m.Span(localOffset, length).Atomic(target(tgt, pt, match, remoteOffset), op, dt,
		portals.OpOptions{Ack: ack, HdrData: hdrData, Cookie: userPtr})
}

// FetchAtomic is PtlFetchAtomic (Span.FetchAtomic).
func FetchAtomic(getMD *portals.MD, getOffset uint64, putMD *portals.MD, putOffset, length uint64,
	tgt portals.ProcessID, pt portals.PTIndex, match, remoteOffset, userPtr, hdrData uint64,
	op portals.AtomicOp, dt portals.AtomicType) error {
	return putMD.Span(putOffset, length).FetchAtomic(getMD.Span(getOffset, length), target(tgt, pt, match, remoteOffset),
		op, dt, portals.OpOptions{HdrData: hdrData, Cookie: userPtr})
}

// Swap is PtlSwap (Span.Swap).
func Swap(getMD *portals.MD, getOffset uint64, putMD *portals.MD, putOffset, length uint64,
	tgt portals.ProcessID, pt portals.PTIndex, match, remoteOffset, userPtr, hdrData uint64, operand []byte,
	op portals.AtomicOp, dt portals.AtomicType) error {
	return putMD.Span(putOffset, length).Swap(getMD.Span(getOffset, length), target(tgt, pt, match, remoteOffset),
		op, dt, operand, portals.OpOptions{HdrData: hdrData, Cookie: userPtr})
}

func trig(ct *portals.CT, threshold uint64) portals.Trigger {
	return portals.Trigger{CT: ct, Threshold: threshold}
}

// errNilTrigger is the answer for a triggered call without a counter.
func errNilTrigger(op string) error {
	return nic.NilHandle(op, "trigger counting event")
}

// TriggeredPut is PtlTriggeredPut (Span.Put with a Trigger).
func TriggeredPut(m *portals.MD, localOffset, length uint64, ack portals.AckReq, tgt portals.ProcessID,
	pt portals.PTIndex, match, remoteOffset, userPtr, hdrData uint64, trigCT *portals.CT, threshold uint64) error {
	if trigCT == nil {
		return errNilTrigger("PtlTriggeredPut")
	}
	return m.Span(localOffset, length).Put(target(tgt, pt, match, remoteOffset),
		portals.OpOptions{Ack: ack, HdrData: hdrData, Cookie: userPtr, Trigger: trig(trigCT, threshold)})
}

// TriggeredGet is PtlTriggeredGet (Span.Get with a Trigger).
func TriggeredGet(m *portals.MD, localOffset, length uint64, tgt portals.ProcessID, pt portals.PTIndex,
	match, remoteOffset, userPtr uint64, trigCT *portals.CT, threshold uint64) error {
	if trigCT == nil {
		return errNilTrigger("PtlTriggeredGet")
	}
	return m.Span(localOffset, length).Get(target(tgt, pt, match, remoteOffset),
		portals.OpOptions{Cookie: userPtr, Trigger: trig(trigCT, threshold)})
}

// TriggeredAtomic is PtlTriggeredAtomic (Span.Atomic with a Trigger).
func TriggeredAtomic(m *portals.MD, localOffset, length uint64, ack portals.AckReq, tgt portals.ProcessID,
	pt portals.PTIndex, match, remoteOffset, userPtr, hdrData uint64, op portals.AtomicOp, dt portals.AtomicType,
	trigCT *portals.CT, threshold uint64) error {
	if trigCT == nil {
		return errNilTrigger("PtlTriggeredAtomic")
	}
	return m.Span(localOffset, length).Atomic(target(tgt, pt, match, remoteOffset), op, dt,
		portals.OpOptions{Ack: ack, HdrData: hdrData, Cookie: userPtr, Trigger: trig(trigCT, threshold)})
}

// TriggeredFetchAtomic is PtlTriggeredFetchAtomic (Span.FetchAtomic with a Trigger).
func TriggeredFetchAtomic(getMD *portals.MD, getOffset uint64, putMD *portals.MD, putOffset, length uint64,
	tgt portals.ProcessID, pt portals.PTIndex, match, remoteOffset, userPtr, hdrData uint64,
	op portals.AtomicOp, dt portals.AtomicType, trigCT *portals.CT, threshold uint64) error {
	if trigCT == nil {
		return errNilTrigger("PtlTriggeredFetchAtomic")
	}
	return putMD.Span(putOffset, length).FetchAtomic(getMD.Span(getOffset, length), target(tgt, pt, match, remoteOffset),
		op, dt, portals.OpOptions{HdrData: hdrData, Cookie: userPtr, Trigger: trig(trigCT, threshold)})
}

// TriggeredSwap is PtlTriggeredSwap (Span.Swap with a Trigger).
func TriggeredSwap(getMD *portals.MD, getOffset uint64, putMD *portals.MD, putOffset, length uint64,
	tgt portals.ProcessID, pt portals.PTIndex, match, remoteOffset, userPtr, hdrData uint64, operand []byte,
	op portals.AtomicOp, dt portals.AtomicType, trigCT *portals.CT, threshold uint64) error {
	if trigCT == nil {
		return errNilTrigger("PtlTriggeredSwap")
	}
	return putMD.Span(putOffset, length).Swap(getMD.Span(getOffset, length), target(tgt, pt, match, remoteOffset),
		op, dt, operand, portals.OpOptions{HdrData: hdrData, Cookie: userPtr, Trigger: trig(trigCT, threshold)})
}

// TriggeredCTInc is PtlTriggeredCTInc (CT.IncWhen).
func TriggeredCTInc(c *portals.CT, inc portals.CTEvent, trigCT *portals.CT, threshold uint64) error {
	if trigCT == nil {
		return errNilTrigger("PtlTriggeredCTInc")
	}
	return c.IncWhen(trig(trigCT, threshold), inc)
}

// TriggeredCTSet is PtlTriggeredCTSet (CT.SetWhen).
func TriggeredCTSet(c *portals.CT, v portals.CTEvent, trigCT *portals.CT, threshold uint64) error {
	if trigCT == nil {
		return errNilTrigger("PtlTriggeredCTSet")
	}
	return c.SetWhen(trig(trigCT, threshold), v)
}

// StartBundle is PtlStartBundle (NI.StartBundle).
func StartBundle(ni *portals.NI) error { return ni.StartBundle() }

// EndBundle is PtlEndBundle (NI.EndBundle).
func EndBundle(ni *portals.NI) error { return ni.EndBundle() }

// AtomicSync is PtlAtomicSync (portals.AtomicSync).
func AtomicSync() error { return portals.AtomicSync() }

// TriggeredMEAppend is the reference implementation's PtlTriggeredMEAppend, an
// extension outside the Portals 4 specification: not provided (ErrNotSupported).
func TriggeredMEAppend(ni *portals.NI, idx portals.PTIndex, s portals.MESpec, list portals.List, userPtr uint64,
	trigCT *portals.CT, threshold uint64) (*portals.ME, error) {
	return nil, ptlerr.New("PtlTriggeredMEAppend", portals.Fail,
		fmt.Errorf("an extension of the reference implementation: %w", portals.ErrNotSupported))
}

// TriggeredMEUnlink is the reference implementation's PtlTriggeredMEUnlink, an
// extension outside the Portals 4 specification: not provided (ErrNotSupported).
func TriggeredMEUnlink(m *portals.ME, trigCT *portals.CT, threshold uint64) error {
	return ptlerr.New("PtlTriggeredMEUnlink", portals.Fail,
		fmt.Errorf("an extension of the reference implementation: %w", portals.ErrNotSupported))
}
