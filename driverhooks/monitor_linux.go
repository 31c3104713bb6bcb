//go:build linux && cgo

package driverhooks

/*
#include "reader.h"

static struct ptl_slot *ptl_reader_ring(struct ptl_reader *r) { return r->ring; }
*/
import "C"

import (
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/goportals/goportals/driverhooks/internal/uffd"
	"golang.org/x/sys/unix"
)

// ringSlots is the size of the broadcast ring (a power of two). A subscription that
// falls further behind than this is told to flush everything.
const ringSlots = 1 << 13

// features are the userfaultfd events the monitor needs.
const features = uffd.FeatureEventUnmap | uffd.FeatureEventRemove | uffd.FeatureEventRemap

// ringSlot mirrors struct ptl_slot.
type ringSlot struct {
	seq, start, end, pad uint64
}

// readerShared mirrors the part of struct ptl_reader that Go reads: the sequence
// word alone on its cache line, then the ring head and the reader's counters.
type readerShared struct {
	seq        uint64
	_          [7]uint64
	head       uint64
	events     uint64
	pagefaults uint64
	errors     uint64
	lastErrno  int64
}

// cacheLine is PTL_CACHE_LINE, the alignment of the reader state.
const cacheLine = C.PTL_CACHE_LINE

// The uffd_msg layout the reader is given (see internal/uffd).
const (
	uffdMsgSize = uffd.MsgSize
	uffdArgOff  = uffd.MsgArgOff
)

// Monitor is a userfaultfd monitor: ranges registered with Watch (write-protect mode
// only, so faults have no side effects) report munmap, partial munmap, mremap,
// mmap(MAP_FIXED) and madvise(DONTNEED/FREE/REMOVE) before those calls return. The
// events are read by a C pthread that never enters Go and published into a lock-free
// ring that subscriptions (see Notifier) drain.
//
// At most one monitor may watch a given range (the kernel answers EBUSY). A process
// normally uses the one behind Default.
type Monitor struct {
	fd, stopfd int
	r          *C.struct_ptl_reader
	sh         *readerShared // r's shared part
	ring       []ringSlot
	seqp       *uint64
	headp      *uint64

	mu      sync.Mutex
	watched *watchSet // how many Watch calls cover each range
	subs    int       // live subscriptions reading the ring
	closed  atomic.Bool
	freed   bool
}

// Open opens a userfaultfd with UFFD_USER_MODE_ONLY, O_CLOEXEC and O_NONBLOCK,
// negotiates the unmap, remove and remap events and starts the reader thread. Errors
// match ErrNotSupported (ErrPermission, ErrNoKernel) when the machine refuses.
func Open() (*Monitor, error) {
	flags := uffd.UserModeOnly | unix.O_CLOEXEC | unix.O_NONBLOCK
	fd, err := uffd.Open(flags)
	if errors.Is(err, unix.EINVAL) {
		// A kernel older than 5.11 has no UFFD_USER_MODE_ONLY.
		fd, err = uffd.Open(flags &^ uffd.UserModeOnly)
	}
	if err != nil {
		kind := ErrNotSupported
		switch {
		case errors.Is(err, unix.EPERM), errors.Is(err, unix.EACCES):
			kind = ErrPermission
		case errors.Is(err, unix.ENOSYS), errors.Is(err, unix.EINVAL):
			kind = ErrNoKernel
		}
		return nil, &OpError{Op: "open", Err: kind, Cause: err}
	}
	got, err := uffd.Handshake(fd, features)
	if err != nil || got&features != features {
		unix.Close(fd)
		return nil, &OpError{Op: "open", Err: ErrNoKernel, Cause: err}
	}
	stopfd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		unix.Close(fd)
		return nil, &OpError{Op: "open", Err: ErrNotSupported, Cause: err}
	}
	abi := readerABI{msgSize: uffdMsgSize, argOff: uffdArgOff, slots: ringSlots}.c()
	r, cerr := C.ptl_reader_new(C.int(fd), C.int(stopfd), ringSlots, abi)
	if r == nil {
		unix.Close(fd)
		unix.Close(stopfd)
		return nil, &OpError{Op: "open", Err: ErrNotSupported, Cause: cerr}
	}
	if rc := C.ptl_reader_start(r); rc != 0 {
		C.ptl_reader_free(r)
		unix.Close(fd)
		unix.Close(stopfd)
		return nil, &OpError{Op: "open", Err: ErrNotSupported, Cause: unix.Errno(rc)}
	}
	sh := (*readerShared)(unsafe.Pointer(r))
	m := &Monitor{
		fd:      fd,
		stopfd:  stopfd,
		r:       r,
		sh:      sh,
		ring:    unsafe.Slice((*ringSlot)(unsafe.Pointer(C.ptl_reader_ring(r))), ringSlots),
		seqp:    &sh.seq,
		headp:   &sh.head,
		watched: newWatchSet(),
	}
	return m, nil
}

// Watch registers [addr, addr+length) (page-aligned) with the monitor in write-protect
// mode. Watches are counted: each must be ended by one Unwatch of the same range. Errors: ErrBusy, ErrUnwatchable and ErrClosed (all matching ErrNotSupported),
// ErrNotMapped, ErrBadRange.
func (m *Monitor) Watch(addr, length uintptr) error {
	if length == 0 || addr%pageSize != 0 || length%pageSize != 0 || addr+length < addr {
		return &OpError{Op: "watch", Addr: addr, Len: length, Err: ErrBadRange}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed.Load() {
		return &OpError{Op: "watch", Addr: addr, Len: length, Err: ErrClosed}
	}
	if err := uffd.Register(m.fd, addr, length, uffd.RegisterModeWP); err != nil {
		kind := ErrNotSupported
		switch {
		case errors.Is(err, unix.EBUSY):
			kind = ErrBusy
		case errors.Is(err, unix.EINVAL), errors.Is(err, unix.EPERM):
			kind = ErrUnwatchable
		case errors.Is(err, unix.ENOMEM), errors.Is(err, unix.EFAULT):
			kind = ErrNotMapped
		}
		return &OpError{Op: "watch", Addr: addr, Len: length, Err: kind, Cause: err}
	}
	m.watched.add(addr, addr+length)
	return nil
}

// Unwatch ends one Watch of [addr, addr+length): the parts no other Watch covers are
// unregistered. Ranges unmapped meanwhile are not an error: the kernel already
// dropped them.
func (m *Monitor) Unwatch(addr, length uintptr) error {
	if length == 0 || addr%pageSize != 0 || length%pageSize != 0 || addr+length < addr {
		return &OpError{Op: "unwatch", Addr: addr, Len: length, Err: ErrBadRange}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed.Load() {
		return nil
	}
	var first error
	for _, s := range m.watched.remove(addr, addr+length) {
		err := uffd.Unregister(m.fd, s.start, s.end-s.start)
		if err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOMEM) && first == nil {
			first = &OpError{Op: "unwatch", Addr: s.start, Len: s.end - s.start, Err: ErrNotSupported, Cause: err}
		}
	}
	return first
}

// Close unregisters every watched range, then stops the reader (which drains what is
// pending first) and closes the descriptor; closing also releases any range the kernel
// moved with mremap. Subscriptions see a final change that tells them to flush.
func (m *Monitor) Close() error {
	m.mu.Lock()
	if m.closed.Load() {
		m.mu.Unlock()
		return nil
	}
	for _, s := range m.watched.spans() {
		_ = uffd.Unregister(m.fd, s.start, s.end-s.start)
	}
	m.watched = newWatchSet()
	m.closed.Store(true)
	m.mu.Unlock()

	rc := C.ptl_reader_stop(m.r)
	unix.Close(m.fd)
	unix.Close(m.stopfd)
	// The reader is gone: bump seq ourselves so every subscription drains (and flushes).
	atomic.AddUint64(m.seqp, 2)

	m.mu.Lock()
	m.maybeFreeLocked()
	m.mu.Unlock()
	if rc != 0 {
		return &OpError{Op: "close", Err: ErrNotSupported, Cause: unix.Errno(rc)}
	}
	return nil
}

// maybeFreeLocked frees the C state once the monitor is closed and no subscription
// can read it any more.
func (m *Monitor) maybeFreeLocked() {
	if m.closed.Load() && m.subs == 0 && !m.freed {
		m.freed = true
		C.ptl_reader_free(m.r)
	}
}

// MonitorStats are counters of the reader thread.
type MonitorStats struct {
	// Seq is the sequence word (odd while a read is in flight).
	Seq uint64
	// Published is the number of ranges published into the ring.
	Published uint64
	// Events is the number of userfaultfd events read.
	Events uint64
	// Pagefaults counts write-protect faults resolved (none are expected).
	Pagefaults uint64
	// Errors counts unexpected poll/read/ioctl errors; LastErrno is the last one.
	Errors    uint64
	LastErrno int
	// Watched is the number of disjoint ranges currently registered through Watch.
	Watched int
}

// Stats returns the reader's counters.
func (m *Monitor) Stats() MonitorStats {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.freed {
		return MonitorStats{}
	}
	return MonitorStats{
		Seq:        atomic.LoadUint64(m.seqp),
		Published:  atomic.LoadUint64(m.headp),
		Events:     atomic.LoadUint64(&m.sh.events),
		Pagefaults: atomic.LoadUint64(&m.sh.pagefaults),
		Errors:     atomic.LoadUint64(&m.sh.errors),
		LastErrno:  int(atomic.LoadInt64(&m.sh.lastErrno)),
		Watched:    len(m.watched.spans()),
	}
}

// readerABI is what ptl_reader_new is told of the kernel's messages and the ring.
type readerABI struct {
	msgSize, argOff uint32
	slots           uint64
}

// c returns the C form of the ABI, with the event codes of internal/uffd.
func (a readerABI) c() C.struct_ptl_uffd_abi {
	return C.struct_ptl_uffd_abi{
		msg_size:     C.uint32_t(a.msgSize),
		arg_off:      C.uint32_t(a.argOff),
		ev_pagefault: uffd.EventPagefault,
		ev_remap:     uffd.EventRemap,
		ev_remove:    uffd.EventRemove,
		ev_unmap:     uffd.EventUnmap,
		ioctl_wp:     C.ulong(uffd.IoctlWriteProtect),
	}
}

// checkReaderABI makes (and frees, unstarted) a reader for abi: nil if the reader
// accepts it, the errno of ptl_reader_new otherwise.
func checkReaderABI(a readerABI) error {
	r, err := C.ptl_reader_new(-1, -1, C.uint64_t(a.slots), a.c())
	if r == nil {
		return err
	}
	C.ptl_reader_free(r)
	return nil
}

// readerLayout holds sizes and offsets of the shared C declarations (reader.h).
type readerLayout struct {
	SlotSize, SlotSeq, SlotStart, SlotEnd                  uintptr
	Seq, Head, Events, Pagefaults, Errors, LastErrno, Ring uintptr
	Align, MsgMax                                          uintptr
}

// cReaderLayout returns the layout as the C compiler sees it.
func cReaderLayout() readerLayout {
	var l C.struct_ptl_reader_layout
	C.ptl_reader_layout(&l)
	return readerLayout{
		SlotSize: uintptr(l.slot_size), SlotSeq: uintptr(l.slot_seq),
		SlotStart: uintptr(l.slot_start), SlotEnd: uintptr(l.slot_end),
		Seq: uintptr(l.seq), Head: uintptr(l.head), Events: uintptr(l.events),
		Pagefaults: uintptr(l.pagefaults), Errors: uintptr(l.errors),
		LastErrno: uintptr(l.last_errno), Ring: uintptr(l.ring),
		Align: uintptr(l.align), MsgMax: uintptr(l.msg_max),
	}
}

// shared returns the reader state Go reads.
func (m *Monitor) shared() *readerShared { return m.sh }

// readerPageSize returns the page size the reader works in (sysconf).
func (m *Monitor) readerPageSize() uintptr { return uintptr(m.r.page_size) }

// seq loads the sequence word.
func (m *Monitor) seq() uint64 { return atomic.LoadUint64(m.seqp) }

// waitEven returns the sequence word once no read is in flight. The reader never
// blocks while seq is odd (the descriptor is non-blocking), so this is short.
func (m *Monitor) waitEven() uint64 {
	for i := 0; ; i++ {
		s := atomic.LoadUint64(m.seqp)
		if s&1 == 0 {
			return s
		}
		if i > 16 {
			runtime.Gosched()
		}
	}
}

// attach registers a new ring consumer and returns the seq and head it starts from;
// ok is false once the monitor is closed.
func (m *Monitor) attach() (seq, head uint64, ok bool) {
	m.mu.Lock()
	if m.closed.Load() {
		m.mu.Unlock()
		return 0, 0, false
	}
	m.subs++
	m.mu.Unlock()
	seq = m.waitEven()
	return seq, atomic.LoadUint64(m.headp), true
}

// detach forgets a ring consumer.
func (m *Monitor) detach() {
	m.mu.Lock()
	m.subs--
	m.maybeFreeLocked()
	m.mu.Unlock()
}

// drain hands every range published after *cursor to fn and returns the even seq
// that the caller has now caught up with. all reports that ranges were lost (the
// consumer fell behind the ring, or the monitor closed): the caller must flush
// everything it trusted.
func (m *Monitor) drain(cursor *uint64, fn func(start, end uintptr)) (seq uint64, all bool) {
	seq = m.waitEven()
	head := atomic.LoadUint64(m.headp)
	c := *cursor
	if m.closed.Load() {
		*cursor = head
		return seq, true
	}
	if head-c > ringSlots {
		*cursor = head
		return seq, true
	}
	for ; c != head; c++ {
		sl := &m.ring[c&(ringSlots-1)]
		s1 := atomic.LoadUint64(&sl.seq)
		start := atomic.LoadUint64(&sl.start)
		end := atomic.LoadUint64(&sl.end)
		s2 := atomic.LoadUint64(&sl.seq)
		if s1 != c+1 || s2 != c+1 {
			// Overwritten while we read: we lost events.
			*cursor = head
			return seq, true
		}
		fn(uintptr(start), uintptr(end))
	}
	*cursor = c
	return seq, false
}

// Kind reports KindUffd.
func (m *Monitor) Kind() Kind { return KindUffd }

// Window reports true: userfaultfd queues UNMAP after munmap has released the range.
func (m *Monitor) Window() bool { return true }

func init() {
	openers[KindUffd] = func() (Backend, error) {
		m, err := Open()
		if err != nil {
			return nil, err
		}
		return m, nil
	}
}
