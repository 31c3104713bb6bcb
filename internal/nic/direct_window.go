package nic

import (
	"sync/atomic"

	"github.com/goportals/goportals/md"
	"github.com/goportals/goportals/me"
)

// directAppended records an entry appended to a list of t and re-opens the window.
// Called with ni.mu held.
func (ni *NI) directAppended(t *pt, e *entry, list List) {
	d := ni.direct
	if d == nil {
		return
	}
	if list == PriorityList {
		w := &d.wins[t.idx]
		w.prio = append(w.prio, e)
	}
	ni.directSync(t)
}

// directSync revokes the window of t when the entry that takes its messages or any
// rule changed, and opens it again when direct access can stand in for the target.
// Called with ni.mu held; it returns once no peer acts on the old window.
func (ni *NI) directSync(t *pt) {
	d := ni.direct
	if d == nil || int(t.idx) >= len(d.wins) {
		return
	}
	w := &d.wins[t.idx]
	// The head of the priority list: the first appended entry still linked there.
	// Entries that left in front of it are dropped; the rest of the list is
	// compacted only when it holds many that left (an append stays O(1) while the
	// head stays).
	linked := func(e *entry) bool {
		st, err := t.table.State(e.h)
		return err == nil && st.Linked && st.List == me.ListPriority && t.entries[e.h] == e
	}
	if n := len(w.prio); n > 64 && n > 2*t.table.Len(me.ListPriority) {
		kept := w.prio[:0]
		for _, e := range w.prio {
			if linked(e) {
				kept = append(kept, e)
			}
		}
		clear(w.prio[len(kept):])
		w.prio = kept
	}
	var head *entry
	for len(w.prio) > 0 {
		if linked(w.prio[0]) {
			head = w.prio[0]
			break
		}
		w.prio[0] = nil
		w.prio = w.prio[1:]
	}
	var ct *CT
	if head != nil {
		ct = head.ct
	}
	open := ni.directEligible(t, head)
	win := d.win(int(t.idx))
	gen := u64At(win, dtWinGen)
	if open && w.e == head && w.ct == ct && gen.Load()&1 == 0 {
		return // unchanged
	}
	ni.directRevokeWin(int(t.idx), true)
	if !open {
		return
	}
	st, _ := t.table.State(head.h)
	opts := st.Entry.Options
	addr, _ := head.mem.Addr(0)
	bk, _ := md.LookupBacking(addr, head.mem.Len())
	var flags uint32
	if opts&me.OpPut != 0 {
		flags |= wfPut
	}
	if opts&me.OpGet != 0 {
		flags |= wfGet
	}
	if st.Entry.UID == me.UIDAny {
		flags |= wfUIDAny
	}
	if opts&me.AckDisable != 0 {
		flags |= wfAckOff
	}
	if ct != nil && opts&me.EventCTComm != 0 {
		flags |= wfCount
		if opts&me.EventCTBytes != 0 {
			flags |= wfBytes
		}
		u32At(win, dtWinSlot).Store(uint32(ct.slot))
		u64At(win, dtWinSlabIno).Store(ni.cells.ino)
		u32At(win, dtWinSlabFD).Store(uint32(ni.cells.fd))
	}
	u32At(win, dtWinFlags).Store(flags)
	u32At(win, dtWinUID).Store(uint32(st.Entry.UID))
	u64At(win, dtWinIno).Store(bk.Inode)
	u32At(win, dtWinFD).Store(uint32(bk.FD))
	u64At(win, dtWinMemOff).Store(bk.Offset)
	u64At(win, dtWinLength).Store(head.mem.Len())
	u64At(win, dtWinMemSize).Store(bk.Size)
	u64At(win, dtWinMaxMsg).Store(ni.limits.MaxMsgSize)
	u64At(win, dtWinMaxAtom).Store(ni.limits.MaxAtomicSize)
	w.e, w.ct = head, ct
	gen.Add(1) // even: open
}

// directEligible reports whether direct access can stand in for the target for
// every message head takes on t. Called with ni.mu held.
func (ni *NI) directEligible(t *pt, head *entry) bool {
	if head == nil || !t.enabled || (t.opts&PTFlowCtrl != 0 && t.eq != nil) {
		return false
	}
	st, err := t.table.State(head.h)
	if err != nil {
		return false
	}
	opts := st.Entry.Options
	if opts&me.UseOnce != 0 || opts&me.ManageLocal != 0 {
		return false // the target would unlink it or move its offset
	}
	if t.eq != nil && opts&(me.EventSuccessDisable|me.EventCommDisable) == 0 {
		return false // the target would post an event
	}
	if head.ct != nil && opts&me.EventCTComm != 0 {
		if _, live := ni.cts[head.ct]; !live || ni.cells == nil || ni.cells.fd < 0 {
			return false
		}
	}
	n := head.mem.Len()
	if n == 0 {
		return false
	}
	if _, ok := head.mem.Contiguous(0, n); !ok {
		return false
	}
	addr, ok := head.mem.Addr(0)
	if !ok {
		return false
	}
	_, ok = md.LookupBacking(addr, n)
	return ok
}

// directRevoke closes a window and returns once no initiator acts on it: it makes
// the generation odd, then waits until no initiator of the table is inside any
// window (each says so in its own in-flight word). An initiator whose process is
// gone is not waited for (its word is cleared): it died inside a window and never
// leaves it.
func directRevoke(tab, win []byte) {
	gen := u64At(win, dtWinGen)
	if gen.Load()&1 == 0 {
		gen.Add(1)
	}
	nwin := int(u32At(tab, 8).Load())
	base := dtHeader + nwin*dtWinSize
	for s := 0; s < dtSeenSlots; s++ {
		o := base + s*dtSeenSize
		if u64At(tab, o).Load() == 0 {
			continue // never claimed
		}
		in := u64At(tab, o+dtSeenIn)
		for i := 0; ; i++ {
			v := in.Load()
			if uint32(v) == 0 {
				break
			}
			if i >= 1024 && i%256 == 0 && processGone(int(v>>32)) {
				in.CompareAndSwap(v, 0) // a new process under the same key starts afresh anyway
				continue
			}
			directPause(i)
		}
	}
}

// directEnter records that this process acts on a window of the table whose
// in-flight word is in (me: our OS pid << 32). A word left by a process that died
// under the same key is taken over.
func directEnter(in *atomic.Uint64, me uint64) {
	for {
		v := in.Load()
		nv := v + 1
		if v&^0xffffffff != me {
			nv = me | 1
		}
		if in.CompareAndSwap(v, nv) {
			return
		}
	}
}

// directLeave undoes directEnter.
func directLeave(in *atomic.Uint64) { in.Add(^uint64(0)) }

// testRequestHandled, when set by a test, runs (once) as the target's engine is
// done with a request: its answer is sent.
var testRequestHandled atomic.Pointer[func()]

func testAfterRequest() {
	if f := testRequestHandled.Swap(nil); f != nil {
		(*f)()
	}
}

// testDirectInWindow, when set by a test, runs while an initiator is inside a
// window (entered, generation checked, nothing done yet): a test freezes the
// initiator there.
var testDirectInWindow atomic.Pointer[func()]

// directRevokeWin revokes window i and forgets its entry. A notice an initiator
// asked for through the window and the notice loop did not take yet is handed to
// the loop (with keep) for the counter the window counted on: the counter changed
// from outside, so its waiters must wake and its triggers fire. Called with ni.mu
// held.
func (ni *NI) directRevokeWin(i int, keep bool) {
	d := ni.direct
	win := d.win(i)
	directRevoke(d.tab, win)
	// No initiator is in the window now: the flag is settled.
	if u32At(win, dtWinNotice).Swap(0) != 0 && keep && d.wins[i].ct != nil {
		d.owed = append(d.owed, d.wins[i].ct)
		u32At(d.tab, dtNotify).Add(1)
		directWake(d.tab)
	}
	d.wins[i].e, d.wins[i].ct = nil, nil
}

// directUnlinked re-checks the window of t after an entry left it. Called with
// ni.mu held.
func (ni *NI) directUnlinked(t *pt) { ni.directSync(t) }

// directCTFreed closes every window that counts on c. Called with ni.mu held.
func (ni *NI) directCTFreed(c *CT) {
	d := ni.direct
	if d == nil {
		return
	}
	for i := range d.wins {
		if d.wins[i].ct == c {
			ni.directRevokeWin(i, false) // the counter goes: nobody to tell
		}
	}
}

// directMemFreed closes every window over [addr, addr+n) (md's Free hook). Called
// without ni.mu.
func (ni *NI) directMemFreed(addr, n uintptr) {
	d := ni.direct
	if d == nil || ni.dead.Load() {
		return
	}
	ni.mu.Lock()
	defer ni.mu.Unlock()
	for i := range d.wins {
		e := d.wins[i].e
		if e == nil {
			continue
		}
		a, _ := e.mem.Addr(0)
		if a < addr+n && addr < a+uintptr(e.mem.Len()) {
			ni.directRevokeWin(i, true)
		}
	}
}
