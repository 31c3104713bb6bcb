package nic

import (
	"fmt"

	"github.com/goportals/goportals/me"
)

// pt is one portal table entry: its match lists (package me), event queue,
// options and the engine state of its entries.
type pt struct {
	idx     PTIndex
	opts    PTOptions
	eq      *EQ
	table   *me.Table
	enabled bool
	entries map[me.Handle]*entry
	active  int // messages still moving data on this entry (long transfers)
}

// PTAlloc allocates a portal table entry (PtlPTAlloc): req, or the lowest free
// index for PTAny. Flow control (PTFlowCtrl) needs an event queue.
func (ni *NI) PTAlloc(opts PTOptions, q *EQ, req PTIndex) (PTIndex, error) {
	const op = "PtlPTAlloc"
	if err := ni.check(op); err != nil {
		return 0, err
	}
	if opts&^(PTOnlyUseOnce|PTOnlyTruncate|PTFlowCtrl|PTMatchUnordered) != 0 {
		return 0, opErr(op, ArgInvalid, fmt.Errorf("options %#x", uint32(opts)))
	}
	if opts&PTFlowCtrl != 0 && q == nil {
		return 0, opErr(op, PTEQNeeded, nil)
	}
	if q != nil && q.ni != ni {
		return 0, opErr(op, ArgInvalid, fmt.Errorf("event queue of another NI"))
	}
	ni.mu.Lock()
	defer ni.mu.Unlock()
	if req != PTAny {
		if int(req) >= len(ni.pts) {
			return 0, opErr(op, ArgInvalid, fmt.Errorf("index %d above max_pt_index %d", req, len(ni.pts)-1))
		}
		if ni.pts[req] != nil {
			return 0, opErr(op, PTInUse, nil)
		}
	} else {
		req = PTIndex(len(ni.pts))
		for i, t := range ni.pts {
			if t == nil {
				req = PTIndex(i)
				break
			}
		}
		if int(req) == len(ni.pts) {
			return 0, opErr(op, PTFull, nil)
		}
	}
	addr := me.Physical
	if ni.Logical() {
		addr = me.Logical
	}
	table, err := me.NewTable(me.Config{Matching: ni.Matching(), Addressing: addr,
		MaxEntries: ni.limits.MaxEntries, MaxListSize: ni.limits.MaxListSize,
		MaxUnexpectedHeaders: ni.limits.MaxUnexpectedHeaders,
		MaxMsgSize:           ni.limits.MaxMsgSize, MaxAtomicSize: ni.limits.MaxAtomicSize})
	if err != nil {
		return 0, opErr(op, NoSpace, err)
	}
	ni.pts[req] = &pt{idx: req, opts: opts, eq: q, table: table, enabled: true, entries: map[me.Handle]*entry{}}
	return req, nil
}

// ptAt returns the allocated entry at idx. Called with ni.mu held.
func (ni *NI) ptAt(idx PTIndex) *pt {
	if int(idx) >= len(ni.pts) {
		return nil
	}
	return ni.pts[idx]
}

// PTFree frees a portal table entry (PtlPTFree); it must have no entries linked.
func (ni *NI) PTFree(idx PTIndex) error {
	const op = "PtlPTFree"
	if err := ni.check(op); err != nil {
		return err
	}
	ni.mu.Lock()
	defer ni.mu.Unlock()
	t := ni.ptAt(idx)
	if t == nil {
		return opErr(op, ArgInvalid, fmt.Errorf("index %d not allocated", idx))
	}
	if len(t.entries) > 0 {
		return opErr(op, PTInUse, nil)
	}
	ni.pts[idx] = nil
	return nil
}

// PTDisable stops delivery to the entry (PtlPTDisable): later messages are dropped,
// and it returns once the messages already being processed on the entry have
// completed and posted their events.
func (ni *NI) PTDisable(idx PTIndex) error { return ni.setEnabled("PtlPTDisable", idx, false) }

// PTEnable resumes delivery (PtlPTEnable), for example after flow control.
func (ni *NI) PTEnable(idx PTIndex) error { return ni.setEnabled("PtlPTEnable", idx, true) }

func (ni *NI) setEnabled(op string, idx PTIndex, on bool) error {
	if err := ni.check(op); err != nil {
		return err
	}
	ni.mu.Lock()
	defer ni.mu.Unlock()
	t := ni.ptAt(idx)
	if t == nil {
		return opErr(op, ArgInvalid, fmt.Errorf("index %d not allocated", idx))
	}
	t.enabled = on
	ni.directSync(t) // a disabled entry takes no direct access either
	if !on && !ni.waitEngine(func() bool { return t.active == 0 }) {
		return opErr(op, ArgInvalid, fmt.Errorf("NI finalized while waiting for messages in process"))
	}
	return nil
}

// releaseEntries drops the engine state of every entry (NI teardown).
func (t *pt) releaseEntries() {
	for h, e := range t.entries {
		e.release()
		delete(t.entries, h)
	}
}
