//go:build linux && cgo

package driverhooks

/*
#include "seccomp.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// seccompSlots is the size of the supervisor's ring.
const seccompSlots = C.PTL_SECCOMP_SLOTS

// Seccomp is the seccomp user-notification backend (KindSeccomp). A classic BPF
// filter on every thread of the process hands munmap, mremap, madvise with an advice
// that can drop or replace pages (DONTNEED, FREE, REMOVE, PAGEOUT, DONTNEED_LOCKED,
// COLLAPSE, GUARD_INSTALL, HWPOISON, SOFT_OFFLINE and any advice a later kernel
// adds), mmap with MAP_FIXED, brk other than brk(0), shmdt, shmat with SHM_REMAP,
// remap_file_pages and process_madvise to a supervisor thread (C, no Go, no
// allocation). For a thread of this process the supervisor makes the call itself,
// with the sequence word odd, publishes the ranges once the pages are gone, turns
// the word even, and only then answers with the call's result. So a lookup that
// starts after such a call returned sees the record, and a registration made while
// the call was in flight (of the old pages) is invalidated by it: there is no
// window either way. It needs no privilege, but kernel 5.19
// (SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV, so that a signal cannot make the caller
// ask twice for a call already made) and x86_64 for now.
//
// Installing the filter is a one-way decision for the whole process: the filter and
// no_new_privs stay on every thread for good (execve of a set-user-ID program no
// longer gains privileges), the supervisor can never stop, and processes started
// afterwards inherit the filter: their calls are answered (let run) by this
// process's supervisor while it lives and fail with ENOSYS once it has exited
// (measured: an orphaned Go program dies the next time its heap grows, "cannot map
// pages in arena address space", its MAP_FIXED mmap failing; a dynamically linked
// program started after the exit cannot even be loaded, for the same reason). A
// process that starts children meant to outlive it must not open this backend
// first, and those children cannot open this backend themselves (the kernel allows
// one listener per filter chain: EBUSY); they fall back to another backend or to
// per-operation registration. Every filtered call costs a round trip to the supervisor and runs on the
// supervisor's thread, one at a time (a few microseconds with
// SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP, kernel 6.6 and later). A thread that left the
// process's descriptor table (unshare(CLONE_FILES)) and maps a file with MAP_FIXED
// would have it mapped from the process's table. Calls the kernel makes on a
// process's behalf without a system call (io_uring's IORING_OP_MADVISE,
// userfaultfd's UFFDIO_MOVE) are not seen; nor is the unmapping of another ABI
// (int 0x80), which is only flushed before it runs.
//
// The first OpenSeccomp installs the filter; later ones return further handles on
// the same supervisor. Watch only counts ranges: every filtered call is published,
// whatever memory it touches, file-backed mappings included.
type Seccomp struct {
	seqp, headp *uint64
	ring        []ringSlot

	mu      sync.Mutex
	watched *watchSet
	closed  atomic.Bool
}

var seccompOpen sync.Mutex

// OpenSeccomp installs the filter on every thread (the first time in the process)
// and returns a handle on the supervisor. Errors match ErrNotSupported: no cgo, an
// architecture the filter does not know (ENOSYS), a kernel older than 5.19 (EINVAL:
// no WAIT_KILLABLE_RECV), seccomp refused by an outer sandbox (EPERM, EACCES), a
// thread the filter cannot be synced to (ESRCH), a filter inherited from a parent
// that opened this backend (EBUSY: the kernel allows one listener per filter chain).
func OpenSeccomp() (*Seccomp, error) {
	seccompOpen.Lock()
	rc := C.ptl_seccomp_open()
	seccompOpen.Unlock()
	if rc != 0 {
		err := unix.Errno(rc)
		why := "seccomp(SET_MODE_FILTER, NEW_LISTENER|TSYNC|TSYNC_ESRCH)"
		switch {
		case errors.Is(err, unix.ENOSYS):
			why = "no seccomp filter for this kernel or architecture"
		case errors.Is(err, unix.EBUSY):
			why = "a filter this process inherited already has a listener (its parent opened this backend)"
		case errors.Is(err, unix.EPROTO):
			why = "the kernel's seccomp_notif is larger than the supervisor's buffer"
		}
		return nil, &OpError{Op: "open seccomp", Err: ErrNotSupported, Cause: fmt.Errorf("%s: %w", why, err)}
	}
	return &Seccomp{
		seqp:    (*uint64)(unsafe.Pointer(C.ptl_seccomp_seq())),
		headp:   (*uint64)(unsafe.Pointer(C.ptl_seccomp_head())),
		ring:    unsafe.Slice((*ringSlot)(unsafe.Pointer(C.ptl_seccomp_ring())), seccompSlots),
		watched: newWatchSet(),
	}, nil
}

// Kind reports KindSeccomp.
func (s *Seccomp) Kind() Kind { return KindSeccomp }

// Window reports false: every filtered call is recorded before it runs.
func (s *Seccomp) Window() bool { return false }

// Watch counts a watch of [addr, addr+length) (page-aligned), which must be mapped.
// The supervisor reports every filtered call whatever memory it touches, so nothing
// is registered with the kernel. Errors: ErrBadRange, ErrNotMapped, ErrClosed.
func (s *Seccomp) Watch(addr, length uintptr) error {
	if length == 0 || addr%pageSize != 0 || length%pageSize != 0 || addr+length < addr {
		return &OpError{Op: "watch", Addr: addr, Len: length, Err: ErrBadRange}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() {
		return &OpError{Op: "watch", Addr: addr, Len: length, Err: ErrClosed}
	}
	// msync(MS_ASYNC) changes nothing and fails with ENOMEM where a page of the
	// range is not mapped.
	if _, _, e := unix.Syscall(unix.SYS_MSYNC, addr, length, unix.MS_ASYNC); e != 0 {
		kind := ErrNotSupported
		if e == unix.ENOMEM {
			kind = ErrNotMapped
		}
		return &OpError{Op: "watch", Addr: addr, Len: length, Err: kind, Cause: e}
	}
	s.watched.add(addr, addr+length)
	return nil
}

// Unwatch ends one Watch of [addr, addr+length).
func (s *Seccomp) Unwatch(addr, length uintptr) error {
	if length == 0 || addr%pageSize != 0 || length%pageSize != 0 || addr+length < addr {
		return &OpError{Op: "unwatch", Addr: addr, Len: length, Err: ErrBadRange}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed.Load() {
		s.watched.remove(addr, addr+length)
	}
	return nil
}

// Close closes this handle: its subscriptions are told to flush everything and Watch
// fails with ErrClosed. The filter and the supervisor stay (they cannot be removed).
func (s *Seccomp) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() {
		return nil
	}
	s.closed.Store(true)
	s.watched = newWatchSet()
	// Every subscriber then sees a change and drains, which reports all.
	atomic.AddUint64(s.seqp, 2)
	return nil
}

// SeccompStats are counters of the supervisor (shared by every handle) and the
// handle's watch count.
type SeccompStats struct {
	// Seq is the sequence word (odd while a record is in flight).
	Seq uint64
	// Published is the number of ranges published into the ring.
	Published uint64
	// Notifications counts the filtered calls answered; the next fields split them
	// by call.
	Notifications                                       uint64
	Munmap, Mremap, Madvise, MmapFixed, Brk, Shm, Other uint64
	// Flushes counts "everything" published (shmdt, shmat, process_madvise, a call
	// of another ABI).
	Flushes uint64
	// StaleIDs counts answers to callers that were gone.
	StaleIDs uint64
	// Foreign counts calls of other processes (started under the inherited filter),
	// let run unrecorded.
	Foreign uint64
	// Errors counts unexpected ioctl errors; LastErrno is the last one.
	Errors    uint64
	LastErrno int
	// SyncWakeUp reports whether the kernel took SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP;
	// SyncErrno says why not.
	SyncWakeUp bool
	SyncErrno  int
	// Watched is the number of disjoint ranges this handle counts.
	Watched int
}

// Stats returns the supervisor's counters.
func (s *Seccomp) Stats() SeccompStats {
	var c C.struct_ptl_seccomp_stats
	C.ptl_seccomp_stats(&c)
	st := SeccompStats{
		Seq:           uint64(c.seq),
		Published:     uint64(c.head),
		Notifications: uint64(c.notifs),
		Munmap:        uint64(c.by_kind[C.PTL_SC_MUNMAP]),
		Mremap:        uint64(c.by_kind[C.PTL_SC_MREMAP]),
		Madvise:       uint64(c.by_kind[C.PTL_SC_MADVISE]),
		MmapFixed:     uint64(c.by_kind[C.PTL_SC_MMAP_FIXED]),
		Brk:           uint64(c.by_kind[C.PTL_SC_BRK]),
		Shm:           uint64(c.by_kind[C.PTL_SC_SHM]),
		Other:         uint64(c.by_kind[C.PTL_SC_OTHER]),
		Flushes:       uint64(c.flushes),
		StaleIDs:      uint64(c.stale_ids),
		Foreign:       uint64(c.foreign),
		Errors:        uint64(c.errors),
		LastErrno:     int(c.last_errno),
		SyncWakeUp:    c.sync_wake_up != 0,
		SyncErrno:     int(c.sync_errno),
	}
	s.mu.Lock()
	st.Watched = len(s.watched.spans())
	s.mu.Unlock()
	return st
}

// seq loads the sequence word.
func (s *Seccomp) seq() uint64 { return atomic.LoadUint64(s.seqp) }

// waitEven returns the sequence word once no record is in flight. The supervisor
// never blocks while seq is odd, so this is short.
func (s *Seccomp) waitEven() uint64 {
	for i := 0; ; i++ {
		v := atomic.LoadUint64(s.seqp)
		if v&1 == 0 {
			return v
		}
		if i > 16 {
			runtime.Gosched()
		}
	}
}

// attach registers a ring consumer; ok is false once the handle is closed.
func (s *Seccomp) attach() (seq, head uint64, ok bool) {
	if s.closed.Load() {
		return 0, 0, false
	}
	seq = s.waitEven()
	return seq, atomic.LoadUint64(s.headp), true
}

// detach forgets a ring consumer: the ring is static, there is nothing to free.
func (s *Seccomp) detach() {}

// drain hands every range published after *cursor to fn and returns the even seq
// the caller has caught up with; all reports lost ranges or a closed handle.
func (s *Seccomp) drain(cursor *uint64, fn func(start, end uintptr)) (seq uint64, all bool) {
	seq = s.waitEven()
	head := atomic.LoadUint64(s.headp)
	c := *cursor
	if s.closed.Load() || head-c > seccompSlots {
		*cursor = head
		return seq, true
	}
	for ; c != head; c++ {
		sl := &s.ring[c&(seccompSlots-1)]
		s1 := atomic.LoadUint64(&sl.seq)
		start := atomic.LoadUint64(&sl.start)
		end := atomic.LoadUint64(&sl.end)
		s2 := atomic.LoadUint64(&sl.seq)
		if s1 != c+1 || s2 != c+1 {
			// Overwritten while we read: ranges were lost.
			*cursor = head
			return seq, true
		}
		fn(uintptr(start), uintptr(end))
	}
	*cursor = c
	return seq, false
}

// seccompSkipSyncWakeUp makes the next install leave the listener without
// SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP, so tests can measure what the flag saves.
func seccompSkipSyncWakeUp() { C.ptl_seccomp_skip_sync_wake_up() }

// seccompSupervisorIP is the instruction pointer of the supervisor's own calls.
func seccompSupervisorIP() uint64 { return uint64(C.ptl_seccomp_supervisor_ip()) }

// bpfInsn mirrors struct ptl_bpf_insn (struct sock_filter).
type bpfInsn struct {
	Code   uint16
	Jt, Jf uint8
	K      uint32
}

// seccompFilter returns the filter program for this architecture, or nil.
func seccompFilter() []bpfInsn {
	var prog [C.PTL_SECCOMP_PROG_MAX]C.struct_ptl_bpf_insn
	n := C.ptl_seccomp_filter(&prog[0])
	if n < 0 {
		return nil
	}
	out := make([]bpfInsn, n)
	for i := range out {
		p := prog[i]
		out[i] = bpfInsn{uint16(p.code), uint8(p.jt), uint8(p.jf), uint32(p.k)}
	}
	return out
}

func init() {
	openers[KindSeccomp] = func() (Backend, error) {
		s, err := OpenSeccomp()
		if err != nil {
			return nil, err
		}
		return s, nil
	}
}
