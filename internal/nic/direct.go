package nic

import (
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/goportals/goportals/eq"
	"github.com/goportals/goportals/internal/envknob"
	"github.com/goportals/goportals/md"
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
