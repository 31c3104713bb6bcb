package nic

import (
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/goportals/goportals/eq"
	"github.com/goportals/goportals/internal/envknob"
	"github.com/goportals/goportals/md"
	"github.com/goportals/goportals/me"
)

// Direct access (PTL_DIRECT=auto, the default). A process stores straight into a
// list entry of a process on its node, and counts the entry's counting event in
// place, instead of sending a request for the target's engine to carry out, when
// the target would do nothing else with the message: see docs/direct.md for the
// rules. The pieces:
//
//   - Every NI keeps a direct table: a memfd, mapped shared, that the node's peers
//     map. It holds one window per portal index (the entry that takes every message
//     there, when direct access can stand in for the target: its memfd, offset and
//     length, permissions, counting event and byte counting, a generation), one
//     slot per initiator (the "seen" count of its requests the target has handled,
//     and its in-flight word: its OS pid and how many of its operations are inside
//     a window) and a futex word that asks the target to notice counters changed
//     from outside.
//   - Peers learn each other's table in the connection handshake (the OS pid, the
//     memfd's descriptor and inode) and open it by /proc/<pid>/fd/<n>, the way the
//     soft provider opens its rings: the same ptrace rules as process_vm_writev.
//   - An initiator acts on a window in a Dekker pair with the target: it raises its
//     in-flight word, re-reads the generation, acts only if it is the one it
//     validated, and lowers the word. The target revokes a window (unlink, PT
//     disable, counter free, NI fini, md Free, any change of the entry that takes the
//     messages) by making the generation odd and waiting until every initiator's
//     word is down, or its process is gone; sequentially consistent atomics on both
//     sides mean that either the initiator sees the new generation or the target sees
//     it in flight and waits. Once the revoking call returns, no peer writes through
//     the old window.
//   - An initiator stops acting on the table of a process that exited (the notice
//     loop watches it by pidfd): the engine's path then reports the dead peer.
//   - Write-after-write order: an initiator goes direct to a target only when every
//     request it sent that target through the engine has been handled there (the
//     target's seen count for it equals the requests it sent, and none of its tracked
//     operations to the target is still waiting for its answer).

// Window layout in the direct table (bytes; all words are accessed atomically).
const (
	dtMagic      = 0x54524450 // "PDRT"
	dtHeader     = 64         // magic u32, version u32, windows u32, seen slots u32, notify u32 @16
	dtNotify     = 16
	dtWinSize    = 128
	dtSeenSlots  = 512
	dtSeenSize   = 32 // key u64 (0: free), seen count u64, in-flight u64 (OS pid<<32 | windows entered), pad
	dtSeenCount  = 8
	dtSeenIn     = 16
	dtVersion    = 2
	dtWinGen     = 0  // u64: odd while closed or being rewritten
	_            = 8  // u64: unused (the in-flight counts are per initiator, in its seen slot)
	dtWinNotice  = 16 // u32: an outside add wants Counter.Notice
	dtWinFlags   = 20 // u32: wf*
	dtWinUID     = 24 // u32
	dtWinSlot    = 28 // u32: counting event slot in the target's cell slab
	dtWinIno     = 32 // u64: the entry's memfd inode
	dtWinFD      = 40 // u32: its descriptor in the target
	dtWinMemOff  = 48 // u64: where the entry starts in the memfd
	dtWinLength  = 56 // u64: the entry's length
	dtWinMemSize = 64 // u64: the memfd's size
	dtWinSlabIno = 72 // u64: the cell slab's memfd inode
	dtWinSlabFD  = 80 // u32
	dtWinMaxMsg  = 88 // u64
	dtWinMaxAtom = 96 // u64: the target's max_atomic_size
)

// Window flags.
const (
	wfPut    = 1 << iota // the entry allows puts (ME_OP_PUT)
	wfGet                // and gets (ME_OP_GET)
	wfUIDAny             // any user may use it
	wfCount              // it counts communication events (CT_COMM) on slot
	wfBytes              // in bytes (CT_BYTES)
	wfAckOff             // acks are disabled (ACK_DISABLE)
)

// liveCheck is how often the notice loop checks that the targets this NI acts on
// directly still run (the loop wakes at least every 100 ms).
const liveCheck = 50 * time.Millisecond

// directEnabled reports whether PTL_DIRECT allows direct access and whether the soft
// provider may share memory between processes of the node at all.
func directEnabled() bool {
	return envknob.Get(envknob.Direct) != "off" && envknob.Get(envknob.SoftPath) != "tcp"
}

// directState is an NI's side of direct access: its own table (as a target) and
// what it knows of its peers' tables (as an initiator). Fields under ni.mu unless
// said otherwise.
type directState struct {
	tab  []byte // the table, mapped shared
	fd   int
	ino  uint64
	wins []winState // by portal index

	seenMu sync.Mutex                       // inserts into the seen slots
	seen   atomic.Pointer[[]*atomic.Uint64] // by peer index: the seen word of that connection's initiator

	remote map[physKey]directHello // peers' tables as announced in handshakes
	peers  []*peerDirect           // by peer index

	ops atomic.Uint64 // operations carried out by direct access
	buf []byte        // an operand and old data, or a put's eager data (under ni.mu)
	// putFault is the error of the last direct put whose raw source faulted
	// part-way (under ni.mu): start returns it.
	putFault error

	// owed are counters of revoked windows whose notice the loop did not take
	// yet (under ni.mu).
	owed []*CT

	stop chan struct{}
	wg   sync.WaitGroup
}

// winState is the target's record of one window.
type winState struct {
	prio []*entry // the priority-list entries of the portal index, in append order (some may have left)
	e    *entry   // the entry the window is open for (nil: closed)
	ct   *CT      // the counter it counts on
}

// directHello is what the handshake carries of a table: enough for a process of the
// node to open it.
type directHello struct {
	ospid uint32
	fd    uint32
	ino   uint64
}

const helloSize = 16

func (h directHello) put(b []byte) {
	le.PutUint32(b, h.ospid)
	le.PutUint32(b[4:], h.fd)
	le.PutUint64(b[8:], h.ino)
}

func getHello(b []byte) directHello {
	return directHello{ospid: le.Uint32(b), fd: le.Uint32(b[4:]), ino: le.Uint64(b[8:])}
}

// peerDirect is an initiator's direct state for one connection.
type peerDirect struct {
	tried  bool
	rt     *remoteTable   // nil: no direct access to this peer
	sent   uint64         // requests sent through the engine
	base   uint64         // the target's seen count for us when we first looked (an earlier NI of our pid)
	track  int            // tracked operations not yet answered
	seen   *atomic.Uint64 // the target's count of our requests it handled
	in     *atomic.Uint64 // our in-flight word in the target's table
	me     uint64         // our OS pid << 32, for in
	snaps  []*winSnap     // by portal index
	selfID uint64
}

// winSnap is an initiator's validated copy of a window.
type winSnap struct {
	gen     uint64
	flags   uint32
	uid     uint32
	slot    uint32
	length  uint64
	maxMsg  uint64
	maxAtom uint64
	bad     bool   // the window could not be used at gen
	mem     []byte // the entry's bytes in our mapping of its memfd
	cell    *eq.Cell
}

// word helpers over shared memory.
func u64At(b []byte, off int) *atomic.Uint64 {
	return (*atomic.Uint64)(unsafe.Pointer(&b[off]))
}

func u32At(b []byte, off int) *atomic.Uint32 {
	return (*atomic.Uint32)(unsafe.Pointer(&b[off]))
}

func (d *directState) win(i int) []byte {
	o := dtHeader + i*dtWinSize
	return d.tab[o : o+dtWinSize]
}

// newDirect sets up an NI's direct table, or returns nil where direct access is off
// or unavailable (the NI then works as before).
func newDirect(ni *NI) *directState {
	if !directEnabled() || ni.Matching() {
		return nil
	}
	nwin := ni.limits.MaxPTIndex + 1
	size := dtHeader + nwin*dtWinSize + dtSeenSlots*dtSeenSize
	tab, fd, ino, err := mapDirectTable(size)
	if err != nil {
		return nil
	}
	u32At(tab, 0).Store(dtMagic)
	u32At(tab, 4).Store(dtVersion)
	u32At(tab, 8).Store(uint32(nwin))
	u32At(tab, 12).Store(dtSeenSlots)
	d := &directState{tab: tab, fd: fd, ino: ino, wins: make([]winState, nwin),
		remote: map[physKey]directHello{}, stop: make(chan struct{})}
	for i := 0; i < nwin; i++ {
		u64At(d.win(i), dtWinGen).Store(1) // closed
	}
	d.wg.Add(1)
	go d.noticeLoop(ni)
	return d
}

// hello is what this NI announces of its table in a handshake (zero: nothing).
func (ni *NI) directHello() directHello {
	if ni.direct == nil {
		return directHello{}
	}
	return directHello{ospid: uint32(osPID()), fd: uint32(ni.direct.fd), ino: ni.direct.ino}
}

// directLearn records the table a peer announced in a handshake. Only a peer of
// this node can use it.
func (ni *NI) directLearn(id ProcessID, h directHello) {
	if ni.direct == nil || h.ino == 0 || id.NID != ni.self.NID {
		return
	}
	ni.mu.Lock()
	ni.direct.remote[keyOf(id)] = h
	ni.mu.Unlock()
}

// --- target side ---

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

// directClose closes every window and stops the notice loop (NI teardown). Called
// without ni.mu, before the counters and entries go.
func (ni *NI) directClose() {
	d := ni.direct
	if d == nil {
		return
	}
	ni.mu.Lock()
	for i := range d.wins {
		ni.directRevokeWin(i, false) // the counters go with the NI
		d.wins[i] = winState{}
	}
	d.owed = nil
	for _, p := range d.peers {
		if p != nil && p.rt != nil {
			p.rt.release()
		}
	}
	d.peers = nil
	ni.mu.Unlock()
	directUnregister(ni)
	close(d.stop)
	directWake(d.tab)
	d.wg.Wait()
	unmapDirectTable(d.tab, d.fd)
}

// directSeen counts one request handled from pr's initiator (the target's half of
// write-after-write order). Called by the target's engine after it handled the
// request.
func (ni *NI) directSeen(pr *peer) {
	d := ni.direct
	if d == nil || pr.idx < 0 {
		return
	}
	if l := d.seen.Load(); l != nil && pr.idx < len(*l) && (*l)[pr.idx] != nil {
		(*l)[pr.idx].Add(1)
		return
	}
	d.seenMu.Lock()
	defer d.seenMu.Unlock()
	var cur []*atomic.Uint64
	if l := d.seen.Load(); l != nil {
		cur = *l
	}
	w := d.seenSlot(seenKey(pr.id), true)
	if w == nil {
		return // table full: that initiator never goes direct
	}
	n := max(len(cur), pr.idx+1)
	l := make([]*atomic.Uint64, n)
	copy(l, cur)
	l[pr.idx] = w
	d.seen.Store(&l)
	w.Add(1)
}

func seenKey(id ProcessID) uint64 { return uint64(id.NID)<<32 | uint64(id.PID) + 1 }

// seenSlotIn finds (or, with insert, claims) the slot of key in the table tab and
// returns its offset, or -1 (not there, or the table is full). The target and its
// initiators may claim slots at the same time: a claim is a compare-and-swap.
func seenSlotIn(tab []byte, key uint64, insert bool) int {
	nwin := int(u32At(tab, 8).Load())
	base := dtHeader + nwin*dtWinSize
	h := int((key * 0x9E3779B97F4A7C15) >> 55) // 9 bits
	for i := 0; i < dtSeenSlots; i++ {
		o := base + ((h+i)%dtSeenSlots)*dtSeenSize
		k := u64At(tab, o)
		for {
			v := k.Load()
			if v == key {
				return o
			}
			if v != 0 {
				break // someone else's: probe on
			}
			if !insert {
				return -1
			}
			if k.CompareAndSwap(0, key) {
				return o
			}
		}
	}
	return -1
}

func (d *directState) seenSlot(key uint64, insert bool) *atomic.Uint64 {
	o := seenSlotIn(d.tab, key, insert)
	if o < 0 {
		return nil
	}
	return u64At(d.tab, o+dtSeenCount)
}

// noticeLoop waits on the table's futex word and tells the counters that peers
// counted into from outside (Counter.Notice): their waiters wake and their triggers
// fire.
func (d *directState) noticeLoop(ni *NI) {
	defer d.wg.Done()
	word := u32At(d.tab, dtNotify)
	var cts []*CT
	var checked time.Time
	for {
		v := word.Load()
		cts = cts[:0]
		ni.mu.Lock()
		for i := range d.wins {
			if u32At(d.win(i), dtWinNotice).Swap(0) != 0 && d.wins[i].ct != nil {
				cts = append(cts, d.wins[i].ct)
			}
		}
		for _, c := range d.owed {
			if _, live := ni.cts[c]; live {
				cts = append(cts, c)
			}
		}
		clear(d.owed)
		d.owed = d.owed[:0]
		if now := time.Now(); now.Sub(checked) >= liveCheck {
			// The targets this NI acts on directly: one that died takes no more
			// direct access (its memory stays mapped here and would accept it).
			checked = now
			for _, p := range d.peers {
				if p != nil && p.rt != nil && !p.rt.dead.Load() && p.rt.exited() {
					p.rt.dead.Store(true)
				}
			}
		}
		ni.mu.Unlock()
		for _, c := range cts {
			c.c.Notice()
		}
		if len(cts) > 0 {
			ni.issueFired(false)
		}
		select {
		case <-d.stop:
			return
		default:
		}
		directWait(d.tab, v)
	}
}

// --- initiator side ---

// directPeer returns pr's direct state, creating it. Called with ni.mu held.
func (ni *NI) directPeer(pr *peer) *peerDirect {
	d := ni.direct
	if pr.idx < 0 {
		return nil
	}
	if pr.idx >= len(d.peers) {
		l := make([]*peerDirect, pr.idx+1, 2*pr.idx+2)
		copy(l, d.peers)
		d.peers = l
	}
	p := d.peers[pr.idx]
	if p == nil {
		p = &peerDirect{}
		d.peers[pr.idx] = p
	}
	return p
}

// directSent records a request about to go to pr through the engine (tracked: it
// waits for an answer, see directFinished). Called with ni.mu held.
func (ni *NI) directSent(pr *peer, tracked bool) {
	if ni.direct == nil {
		return
	}
	if p := ni.directPeer(pr); p != nil {
		p.sent++
		if tracked {
			p.track++
		}
	}
}

// directUnsent takes back a directSent whose request never left the process (a
// local failure): the target will never count it. Called with ni.mu held.
func (ni *NI) directUnsent(pr *peer) {
	if ni.direct == nil || pr == nil || pr.idx < 0 || pr.idx >= len(ni.direct.peers) {
		return
	}
	if p := ni.direct.peers[pr.idx]; p != nil && p.sent > 0 {
		p.sent--
	}
}

// directFinished records that a tracked operation got its answer (or failed).
// Called with ni.mu held.
func (ni *NI) directFinished(o *initOp) {
	if ni.direct == nil || o.pr == nil || o.pr.idx < 0 || o.pr.idx >= len(ni.direct.peers) {
		return
	}
	if p := ni.direct.peers[o.pr.idx]; p != nil && p.track > 0 {
		p.track--
	}
}

// directTry carries out o by direct access when every rule allows it, posting the
// initiator's events, and reports whether it did; otherwise the caller sends it
// through the engine. Called with ni.mu held (it stays held).
func (ni *NI) directTry(o *initOp, pr *peer, operand []byte) bool {
	p := ni.directPeer(pr)
	if p == nil {
		return false
	}
	if !p.tried {
		h, ok := ni.direct.remote[keyOf(pr.id)]
		if !ok {
			return false // not learned (yet): look again next time
		}
		p.tried = true
		p.rt = openRemoteTable(h)
		if p.rt != nil {
			p.selfID = seenKey(ni.physID())
			o := seenSlotIn(p.rt.tab, p.selfID, true)
			if p.sent == 0 && o >= 0 {
				// Requests an earlier NI of our pid sent are counted under the same
				// key: ours start from here.
				p.seen = u64At(p.rt.tab, o+dtSeenCount)
				p.base = p.seen.Load()
				p.in = u64At(p.rt.tab, o+dtSeenIn)
				p.me = uint64(uint32(osPID())) << 32
			} else {
				// Requests went out before we could know the count, or the
				// target's table has no room for us: stay on the engine's path.
				p.rt.release()
				p.rt = nil
			}
		}
	}
	atom := o.kind == msgAtomic || o.kind == msgFetch || o.kind == msgSwap
	if o.kind != msgPut && o.kind != msgGet && !atom {
		return false
	}
	if atom {
		sz := uint64(o.atomType.Size())
		if sz != 4 && sz != 8 || o.length == 0 || o.length%sz != 0 {
			return false
		}
	}
	if p.rt == nil || p.track != 0 || p.rt.dead.Load() {
		return false // a dead target: the engine's path reports it
	}
	if p.sent != 0 && p.seen.Load()-p.base != p.sent {
		return false
	}
	if int(o.pt) >= p.rt.nwin {
		return false
	}
	win := p.rt.win(int(o.pt))
	gen := u64At(win, dtWinGen)
	if p.snaps == nil {
		p.snaps = make([]*winSnap, p.rt.nwin)
	}
	s := p.snaps[o.pt]
	if g := gen.Load(); s == nil || s.gen != g {
		if s = p.rt.snapshot(win, s); s == nil {
			// Closed, changing, or its memory would not map: not again for this
			// generation (a failed open costs system calls).
			if s = p.snaps[o.pt]; s == nil {
				s = &winSnap{}
			}
			*s = winSnap{gen: g, bad: true}
			p.snaps[o.pt] = s
			return false
		}
		p.snaps[o.pt] = s
	}
	if s.bad {
		return false
	}
	// The rules the target would check: permissions (a violation goes to the target,
	// which counts it), no truncation, the message size.
	need := uint32(wfPut)
	switch o.kind {
	case msgGet:
		need = wfGet
	case msgFetch, msgSwap:
		need = wfPut | wfGet
	}
	if s.flags&need != need || (s.flags&wfUIDAny == 0 && s.uid != uint32(ni.proc.uid)) ||
		o.roff > s.length || o.length > s.length-o.roff || o.length > s.maxMsg {
		return false
	}
	if atom && (o.length > s.maxAtom || !inPlaceOK(o.atomType, unsafe.Pointer(&s.mem[o.roff]))) {
		return false
	}
	if s.flags&wfCount != 0 && s.cell == nil {
		return false
	}
	// What our own memory holds goes out of it before the window is entered: an
	// operand, or a put's data from raw memory up to the eager size (a fault then
	// leaves the operation to the engine's path, which fails it the same way).
	var src []byte
	d := ni.direct
	if need := 2 * int(min(o.length, eagerMax)); len(d.buf) < need {
		d.buf = make([]byte, max(need, 2*eagerMax))
	}
	switch {
	case atom:
		src = d.buf[:o.length]
		if _, err := o.md.mem.ReadAt(src, o.localOff); err != nil {
			return false
		}
	case o.kind == msgPut && o.md.mem.IsRaw() && o.length <= eagerMax:
		src = d.buf[:o.length]
		if _, err := o.md.mem.ReadAt(src, o.localOff); err != nil {
			return false
		}
	}
	directEnter(p.in, p.me)
	if gen.Load() != s.gen {
		directLeave(p.in)
		return false
	}
	if f := testDirectInWindow.Load(); f != nil {
		(*f)()
	}
	dst := s.mem[o.roff : o.roff+o.length]
	var srcErr error // a fault reading a long put's raw source, part-way
	switch o.kind {
	case msgPut:
		if src != nil {
			copy(dst, src)
		} else {
			_, srcErr = o.md.mem.ReadAt(dst, o.localOff)
		}
	case msgGet:
	default:
		old := d.buf[o.length : 2*o.length]
		var cond []byte
		if o.kind == msgSwap && o.atomOp >= eq.OpCSwap {
			cond = operand
		}
		atomicInPlace(o.atomOp, o.atomType, dst, src, cond, old)
	}
	// A get copies out while still in the window (the entry's memory may go once
	// it is revoked), and before it is counted: the target may reuse the memory
	// as soon as its counter says the get happened (the engine reads, then
	// counts). Into our memory, whose fault the REPLY reports. A fetch or swap
	// has its old data in d.buf already.
	var dstErr error
	if o.kind == msgGet {
		_, dstErr = o.md.mem.WriteAt(dst, o.localOff)
	}
	attention := false
	if srcErr == nil && s.flags&wfCount != 0 {
		n := uint64(1)
		if s.flags&wfBytes != 0 {
			n = o.length
		}
		attention = s.cell.Add(eq.CTEvent{Success: n})
	}
	if attention {
		u32At(win, dtWinNotice).Store(1)
	}
	directLeave(p.in)
	if attention {
		u32At(p.rt.tab, dtNotify).Add(1)
		directWake(p.rt.tab)
	}
	d.ops.Add(1)
	switch o.kind {
	case msgPut:
		if srcErr != nil {
			// As the engine's path, which cannot pin the range: the call fails
			// with no event; the bytes before the fault may have landed.
			d.putFault = srcErr
			return true
		}
	case msgGet:
		fail := eq.NIOK
		if dstErr != nil {
			fail = eq.NISegv
		}
		ni.initEvent(o, o.md, eq.EventReply, fail, o.length, o.roff, uint8(me.ListPriority))
		return true
	case msgFetch, msgSwap:
		fail := eq.NIOK
		if _, err := o.getMD.mem.WriteAt(d.buf[o.length:2*o.length], o.getOff); err != nil {
			fail = eq.NISegv
		}
		ni.sendEvent(o, eq.NIOK)
		ni.initEvent(o, o.getMD, eq.EventReply, fail, o.length, o.roff, uint8(me.ListPriority))
		return true
	}
	ni.sendEvent(o, eq.NIOK)
	if o.ack != NoAckReq && s.flags&wfAckOff == 0 {
		ni.initEvent(o, o.md, eq.EventAck, eq.NIOK, o.length, o.roff, uint8(me.ListPriority))
	}
	return true
}

// directFault returns (and forgets) the failure of the direct put just carried out
// whose raw source faulted, as the engine's path reports it. Called with ni.mu held.
func (ni *NI) directFault(name string) error {
	err := ni.direct.putFault
	if err == nil {
		return nil
	}
	ni.direct.putFault = nil
	return opErr(name, Fail, err)
}

// DirectOps returns how many operations this NI carried out by direct access (for
// tests and measurements).
func (ni *NI) DirectOps() uint64 {
	if ni.direct == nil {
		return 0
	}
	return ni.direct.ops.Load()
}

// --- the process-wide list of NIs with windows (for md's Free hook) ---

var directNIs struct {
	sync.Mutex
	list []*NI
	once sync.Once
}

// directRegister lists ni for md's Free hook once ni.direct is set (the hook
// reads it).
func directRegister(ni *NI) {
	if ni.direct == nil {
		return
	}
	directNIs.once.Do(func() {
		md.OnFree(func(addr, n uintptr) {
			directNIs.Lock()
			l := append([]*NI(nil), directNIs.list...)
			directNIs.Unlock()
			for _, ni := range l {
				ni.directMemFreed(addr, n)
			}
		})
	})
	directNIs.Lock()
	directNIs.list = append(directNIs.list, ni)
	directNIs.Unlock()
}

func directUnregister(ni *NI) {
	directNIs.Lock()
	defer directNIs.Unlock()
	for i, x := range directNIs.list {
		if x == ni {
			directNIs.list = append(directNIs.list[:i], directNIs.list[i+1:]...)
			return
		}
	}
}
