package nic

import (
	"fmt"
	"os"
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/goportals/goportals/eq"
	"golang.org/x/sys/unix"
)

// mapDirectTable maps a new memfd of size bytes, shared: an NI's direct table.
func mapDirectTable(size int) ([]byte, int, uint64, error) {
	fd, err := unix.MemfdCreate("goportals-direct", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, -1, 0, err
	}
	if err := unix.Ftruncate(fd, int64(size)); err != nil {
		unix.Close(fd)
		return nil, -1, 0, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, -1, 0, err
	}
	tab, err := unix.Mmap(fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		unix.Close(fd)
		return nil, -1, 0, err
	}
	return tab, fd, st.Ino, nil
}

// unmapDirectTable releases a table of mapDirectTable. Peers that mapped it keep
// their own mapping (of closed windows) until they let go.
func unmapDirectTable(tab []byte, fd int) {
	unix.Munmap(tab)
	unix.Close(fd)
}

func osPID() int { return os.Getpid() }

// openPeerFD opens descriptor fd of process pid and checks that it is the memfd of
// inode ino, then maps size bytes of it shared (size 0: its whole length).
func openPeerFD(pid, fd uint32, ino uint64, size uint64) ([]byte, error) {
	f, err := unix.Open(fmt.Sprintf("/proc/%d/fd/%d", pid, fd), unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(f)
	var st unix.Stat_t
	if err := unix.Fstat(f, &st); err != nil {
		return nil, err
	}
	if st.Ino != ino {
		return nil, fmt.Errorf("descriptor %d of pid %d is another file now", fd, pid)
	}
	if size == 0 {
		size = uint64(st.Size)
	}
	if size == 0 || size > uint64(st.Size) || size > 1<<46 {
		return nil, fmt.Errorf("memfd of %d bytes, %d wanted", st.Size, size)
	}
	return unix.Mmap(f, 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
}

// remoteTable is an initiator's mapping of a peer's direct table and of the memory
// its windows name (under the initiator NI's mu).
type remoteTable struct {
	h     directHello
	tab   []byte
	nwin  int
	pidfd int               // the owner's process, to notice it died
	dead  atomic.Bool       // the owner exited: no more direct access (set by the notice loop)
	mems  map[uint64][]byte // by memfd inode: the peer's Alloc memory
	cells map[uint64][]byte // by memfd inode: the peer's counting-event slabs
}

// openRemoteTable maps the table a peer announced, or returns nil (another pid
// namespace, no ptrace access, a process gone).
func openRemoteTable(h directHello) *remoteTable {
	tab, err := openPeerFD(h.ospid, h.fd, h.ino, 0)
	if err != nil {
		return nil
	}
	if len(tab) < dtHeader || u32At(tab, 0).Load() != dtMagic || u32At(tab, 4).Load() != dtVersion {
		unix.Munmap(tab)
		return nil
	}
	nwin := int(u32At(tab, 8).Load())
	if dtHeader+nwin*dtWinSize+dtSeenSlots*dtSeenSize > len(tab) {
		unix.Munmap(tab)
		return nil
	}
	pfd, err := unix.PidfdOpen(int(h.ospid), 0)
	if err != nil {
		unix.Munmap(tab)
		return nil
	}
	return &remoteTable{h: h, tab: tab, nwin: nwin, pidfd: pfd, mems: map[uint64][]byte{}, cells: map[uint64][]byte{}}
}

// exited reports whether the table's owner has exited (its pidfd is readable).
func (r *remoteTable) exited() bool {
	fds := []unix.PollFd{{Fd: int32(r.pidfd), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, 0)
	return err == nil && n > 0
}

// processGone reports whether process pid has exited (or was never there). A
// zombie counts as gone. A pid reused by a new process after the old one was
// reaped reads as alive.
func processGone(pid int) bool {
	if pid <= 0 {
		return false // no owner recorded: cannot tell
	}
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return err == unix.ESRCH
	}
	defer unix.Close(fd)
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, 0)
	return err == nil && n > 0
}

func (r *remoteTable) win(i int) []byte {
	o := dtHeader + i*dtWinSize
	return r.tab[o : o+dtWinSize]
}

// snapshot reads an open window into a winSnap (reusing old), mapping the memory it
// names; nil when the window is closed or changes meanwhile.
func (r *remoteTable) snapshot(win []byte, old *winSnap) *winSnap {
	gen := u64At(win, dtWinGen)
	g := gen.Load()
	if g&1 != 0 {
		return nil
	}
	flags := u32At(win, dtWinFlags).Load()
	uid := u32At(win, dtWinUID).Load()
	slot := u32At(win, dtWinSlot).Load()
	ino := u64At(win, dtWinIno).Load()
	fd := u32At(win, dtWinFD).Load()
	off := u64At(win, dtWinMemOff).Load()
	length := u64At(win, dtWinLength).Load()
	size := u64At(win, dtWinMemSize).Load()
	slabIno := u64At(win, dtWinSlabIno).Load()
	slabFD := u32At(win, dtWinSlabFD).Load()
	maxMsg := u64At(win, dtWinMaxMsg).Load()
	maxAtom := u64At(win, dtWinMaxAtom).Load()
	if gen.Load() != g || off > size || length > size-off {
		return nil
	}
	mem := r.mems[ino]
	if mem == nil || uint64(len(mem)) < size {
		m, err := openPeerFD(r.h.ospid, fd, ino, size)
		if err != nil {
			return nil
		}
		if mem != nil {
			unix.Munmap(mem)
		}
		mem = m
		r.mems[ino] = m
	}
	var cell *eq.Cell
	if flags&wfCount != 0 {
		slab := r.cells[slabIno]
		if slab == nil {
			m, err := openPeerFD(r.h.ospid, slabFD, slabIno, cellSlots*eq.CellSize)
			if err != nil {
				return nil
			}
			slab = m
			r.cells[slabIno] = m
		}
		if uint64(slot) >= cellSlots {
			return nil
		}
		cell = (*eq.Cell)(unsafe.Pointer(&slab[int(slot)*eq.CellSize]))
	}
	if gen.Load() != g {
		return nil // the fields may have changed under us: try again next time
	}
	s := old
	if s == nil {
		s = &winSnap{}
	}
	*s = winSnap{gen: g, flags: flags, uid: uid, slot: slot, length: length, maxMsg: maxMsg, maxAtom: maxAtom,
		mem: mem[off : off+length : off+length], cell: cell}
	r.trim()
	return s
}

// trim unmaps the memory of inodes no open window names any more (freed
// allocations), keeping the rest.
func (r *remoteTable) trim() {
	if len(r.mems) < 4 {
		return
	}
	live := map[uint64]bool{}
	for i := 0; i < r.nwin; i++ {
		w := r.win(i)
		if u64At(w, dtWinGen).Load()&1 == 0 {
			live[u64At(w, dtWinIno).Load()] = true
		}
	}
	for ino, m := range r.mems {
		if !live[ino] {
			unix.Munmap(m)
			delete(r.mems, ino)
		}
	}
}

// release unmaps everything of the peer's table. The snapshots that point into it
// must be gone (the peer's state is dropped with it).
func (r *remoteTable) release() {
	for _, m := range r.mems {
		unix.Munmap(m)
	}
	for _, m := range r.cells {
		unix.Munmap(m)
	}
	unix.Munmap(r.tab)
	unix.Close(r.pidfd)
	r.mems, r.cells, r.tab = nil, nil, nil
}

// directWake wakes the notice loop of the table's owner (a futex shared between
// processes).
func directWake(tab []byte) {
	unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(&tab[dtNotify])), futexWake, 1, 0, 0, 0)
}

// directWait sleeps until the table's notify word is no longer v, a wake, or a
// timeout (so the loop also sees a stop request it was not woken for).
func directWait(tab []byte, v uint32) {
	ts := unix.NsecToTimespec(int64(100 * time.Millisecond))
	unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(&tab[dtNotify])), futexWait, uintptr(v),
		uintptr(unsafe.Pointer(&ts)), 0, 0)
}

// directPause is one round of a revocation's wait for initiators to leave a window:
// they are inside a copy, so spin first, then yield, then sleep.
func directPause(i int) {
	switch {
	case i < 64:
		spinPause()
	case i < 1024:
		runtime.Gosched()
	default:
		time.Sleep(10 * time.Microsecond)
	}
}

var spinSink atomic.Uint32

func spinPause() { spinSink.Add(1) }

// futex operations (shared, not FUTEX_PRIVATE_FLAG: the word is in memory of
// several processes).
const (
	futexWait = 0
	futexWake = 1
)
