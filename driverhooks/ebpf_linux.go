//go:build linux

package driverhooks

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/ringbuf"
	"golang.org/x/sys/unix"
)

// EBPF is the eBPF backend (KindEBPF): programs on the syscall-entry tracepoints of
// the calls that release or replace pages run in the calling thread before the call
// does anything. For a thread of this process they note the call in an in-flight
// map keyed by thread, commit its range to a ring buffer map and then bump a counter
// in a memory-mapped array map, so Pending is one atomic load and an unmapping call
// cannot return before its range is recorded. A program on the sys_exit raw
// tracepoint commits the range again when the call returns, forgets it and bumps the
// counter once more.
//
// Recording at entry alone would leave a window the other way round: a lookup that
// drains after the entry record but before the kernel has released the pages could
// register the old pages again, and another thread could map new memory at the
// address before the call returns. So a drain that finds a call in flight publishes
// its ranges again and leaves every subscription pending (the sequence value it
// returns is one the counter never takes): each lookup drains, and drops what was
// registered meanwhile, until the exit record arrives, and the exit record
// invalidates whatever was registered before it. No window either way. It needs
// CAP_BPF and CAP_PERFMON (or CAP_SYS_ADMIN).
//
// What is recorded, at syscall entry (a call that then fails is recorded all the same):
//   - munmap(addr, len): [addr, addr+len).
//   - mremap(addr, old_len, new_len, flags, new_addr): [addr, addr+old_len) always
//     (the pages may move even when the call grows in place), and with MREMAP_FIXED
//     also [new_addr, new_addr+new_len), which the call replaces.
//   - mmap with MAP_FIXED: [addr, addr+len), which the new mapping replaces.
//     MAP_FIXED_NOREPLACE fails rather than replace and is not recorded.
//   - madvise with an advice that drops or replaces pages: MADV_DONTNEED,
//     MADV_DONTNEED_LOCKED, MADV_FREE, MADV_REMOVE, MADV_PAGEOUT, MADV_COLLAPSE,
//     MADV_GUARD_INSTALL (zaps the range), MADV_HWPOISON and MADV_SOFT_OFFLINE
//     (replace the page). Advice that only changes hints, dump, KSM, THP or fork
//     behaviour (WIPEONFORK and DONTFORK act on the child only), POPULATE_* (faults
//     in, never replaces a present page) and GUARD_REMOVE (the range has no pages) are
//     not recorded.
//   - process_madvise with one of those advices: the ranges are in a user iovec the
//     program does not read, so it records a flush.
//   - brk(addr), addr != 0: the break is not known at entry, so the programs keep the
//     highest break any brk call of the process returned (the exit program raises it;
//     the opener calls brk(0) once to seed it) and record [addr, highest) when addr
//     is below it. Memory above the highest break was never handed out. Before the
//     first return is seen they record [addr, top of the address space).
//   - shmdt: the segment's size is not an argument: a flush. shmat with SHM_REMAP:
//     a flush.
//   - remap_file_pages(start, size): [start, start+size).
//
// Not seen: memory changed by another process (a forked child's munmap of shared
// memory, truncation of a shared file), and madvise issued through io_uring. Watch
// therefore refuses shared and file-backed mappings, as userfaultfd does.
//
// Watch and Unwatch keep a counted watch set in user space; the programs record every
// unmapping call of the process, and a drain publishes to the subscriptions only the
// ranges that overlap a watched range (and every flush). The pin cache watches a
// range before it registers it and unwatches it only when it drops the entry, so a
// range filtered out belongs to no entry.
//
// When the kernel ring is full the program cannot record a range: it bumps a lost
// counter (then the sequence word), and the next drain tells every subscription to
// flush everything (and rebuilds the calls in flight from the in-flight map). With
// more than 8,192 threads inside such calls at once, a call the in-flight map cannot
// hold is recorded as a flush at entry only.
//
// Costs: the exit program runs at every system call exit on the machine (a hash
// lookup; the entry tracepoints already put every thread on the traced syscall
// path while attached). Close, and the exit of a process that holds the backend,
// takes about half a second on this kernel: detaching a program from a syscall
// tracepoint waits for a grace period, about 60 ms for each of the nine. Close
// detaches the programs and tells the subscriptions to flush.
type EBPF struct {
	progs    []*ebpf.Program
	perfFDs  []int
	exitLink link.Link
	filter   *ebpf.Map
	ring     *ebpf.Map
	ctrs     *ebpf.Map
	inflight *ebpf.Map
	mem      []byte  // the counters map, mapped shared
	seqp     *uint64 // the sequence word in mem
	lostp    *uint64 // ranges the programs could not record
	brkp     *uint64 // highest break seen (0: none yet)
	maps     *os.File

	mu       sync.Mutex
	rd       *ringbuf.Reader
	rec      ringbuf.Record
	lostSeen uint64
	calls    map[uint64]ebpfCall // recorded calls not returned yet, by thread
	watched  *watchSet
	subs     int
	closed   atomic.Bool
	freed    bool
	slots    []ebpfSlot
	head     atomic.Uint64
	records  uint64
	flushes  uint64
}

// EBPFOptions tune OpenEBPF; the zero value takes the defaults.
type EBPFOptions struct {
	// RingBytes is the size of the kernel ring of recorded calls: a power of two of
	// at least one page (default 512 KiB: 9,362 records of 56 bytes, two per call).
	// A ring that fills up before a drain loses records and makes the subscriptions
	// flush everything.
	RingBytes int
}

// EBPFStats are counters of an eBPF backend.
type EBPFStats struct {
	// Seq is the sequence word (bumped once per recorded unmapping call).
	Seq uint64
	// Lost counts calls the programs could not record because the ring was full.
	Lost uint64
	// Records counts records read from the kernel ring.
	Records uint64
	// Published counts ranges and flushes handed to the subscriptions' ring.
	Published uint64
	// Flushes counts the flushes among them (shmdt, process_madvise, lost records).
	Flushes uint64
	// BrkHigh is the highest program break seen (0: none yet).
	BrkHigh uint64
	// InFlight is the number of recorded calls that had not returned at the last
	// drain.
	InFlight int
	// Programs is the number of attached programs.
	Programs int
	// Watched is the number of disjoint watched ranges.
	Watched int
}

// ebpfCall is a recorded call in flight: its ranges (or a flush).
type ebpfCall struct {
	r     [2]span
	flush bool
}

// ebpfSlot is one entry of the broadcast ring read by the subscriptions: seq is
// index+1 once the entry is written (0 while it is rewritten).
type ebpfSlot struct {
	seq, start, end, flags atomic.Uint64
}

const (
	ebpfSlots        = 1 << 12
	defaultEBPFRing  = 512 << 10
	ebpfRecordSize   = 48   // start, end, start2, end2, thread id uint64; op, flags uint32
	ebpfInflightSize = 40   // start, end, start2, end2 uint64; op, flags uint32
	ebpfInflightMax  = 8192 // threads inside a recorded call at once
	ebpfCounterBytes = 128  // one value of the counters map
	recTid           = 32   // record offsets
	recOp            = 40
	ctrSeq           = 0       // sequence word, alone on its cache line
	ctrLost          = 64      // lost records
	ctrBrk           = 72      // highest break seen
	recFlush         = 1       // record flag: flush everything
	recExit          = 2       // record flag: the call returned
	recUntracked     = 4       // record flag: the in-flight map was full
	recSilent        = 8       // in-flight flag: a brk that records nothing
	poisonSeq        = 1 << 63 // xor-ed into a drained seq while calls are in flight
	bpfFMmapable     = 1 << 10
	bpfRBNoWakeup    = 1 // bpf_ringbuf_submit: no reader to wake (drains poll the counter)
	shmRemap         = 0o40000
	madvSoftOffline  = 101
	ebpfLicense      = "Dual MIT/GPL"
)

// Record ops (the op field, for tests and statistics).
const (
	opMunmap uint32 = 1 + iota
	opMremap
	opMmapFixed
	opMadvise
	opProcessMadvise
	opBrk
	opShmdt
	opShmat
	opRemapFilePages
)

// dropAdvice are the madvise advices that drop or replace the pages of the range.
var dropAdvice = []int32{
	unix.MADV_DONTNEED, unix.MADV_DONTNEED_LOCKED, unix.MADV_FREE, unix.MADV_REMOVE,
	unix.MADV_PAGEOUT, unix.MADV_COLLAPSE, unix.MADV_GUARD_INSTALL,
	unix.MADV_HWPOISON, madvSoftOffline,
}

// OpenEBPF loads and attaches the programs and maps the counters. It fails with an
// error matching ErrNotSupported that says why when the process lacks CAP_BPF or
// CAP_PERFMON, the kernel refuses the programs or no tracefs can be found or mounted.
// opts may be nil.
func OpenEBPF(opts *EBPFOptions) (*EBPF, error) {
	ringBytes := defaultEBPFRing
	if opts != nil && opts.RingBytes != 0 {
		ringBytes = opts.RingBytes
	}
	if ringBytes < int(pageSize) || ringBytes&(ringBytes-1) != 0 {
		return nil, &OpError{Op: "open ebpf", Err: ErrBadRange, Cause: fmt.Errorf("ring of %d bytes: want a power of two of at least %d", ringBytes, pageSize)}
	}
	// Probe the capabilities before anything touches the bpf syscall: the library
	// caches its feature probes, which must not be run without privileges.
	if err := checkBPFCaps(); err != nil {
		return nil, notSupported("open ebpf", err)
	}
	var ns unix.Stat_t
	if err := unix.Stat("/proc/self/ns/pid", &ns); err != nil {
		return nil, notSupported("open ebpf", fmt.Errorf("pid namespace: %w", err))
	}
	tps, err := readTracepoints(ebpfTracepoints)
	if err != nil {
		return nil, notSupported("open ebpf", err)
	}
	maps, err := os.Open("/proc/self/maps")
	if err != nil {
		return nil, notSupported("open ebpf", err)
	}
	b := &EBPF{maps: maps, watched: newWatchSet(), slots: make([]ebpfSlot, ebpfSlots), calls: map[uint64]ebpfCall{}}
	ok := false
	defer func() {
		if !ok {
			b.release()
		}
	}()
	if b.filter, err = ebpf.NewMap(&ebpf.MapSpec{Name: "ptl_tgids", Type: ebpf.Hash, KeySize: 4, ValueSize: 4, MaxEntries: 1}); err != nil {
		return nil, notSupported("open ebpf", fmt.Errorf("create the tgid map: %w", err))
	}
	if b.ring, err = ebpf.NewMap(&ebpf.MapSpec{Name: "ptl_unmaps", Type: ebpf.RingBuf, MaxEntries: uint32(ringBytes)}); err != nil {
		return nil, notSupported("open ebpf", fmt.Errorf("create the ring buffer: %w", err))
	}
	if b.inflight, err = ebpf.NewMap(&ebpf.MapSpec{Name: "ptl_inflight", Type: ebpf.Hash, KeySize: 8, ValueSize: ebpfInflightSize, MaxEntries: ebpfInflightMax}); err != nil {
		return nil, notSupported("open ebpf", fmt.Errorf("create the in-flight map: %w", err))
	}
	if b.ctrs, err = ebpf.NewMap(&ebpf.MapSpec{Name: "ptl_seq", Type: ebpf.Array, KeySize: 4, ValueSize: ebpfCounterBytes, MaxEntries: 1, Flags: bpfFMmapable}); err != nil {
		return nil, notSupported("open ebpf", fmt.Errorf("create the counter map: %w", err))
	}
	if b.mem, err = unix.Mmap(b.ctrs.FD(), 0, int(pageSize), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED); err != nil {
		return nil, notSupported("open ebpf", fmt.Errorf("map the counters: %w", err))
	}
	b.seqp = (*uint64)(unsafe.Pointer(&b.mem[ctrSeq]))
	b.lostp = (*uint64)(unsafe.Pointer(&b.mem[ctrLost]))
	b.brkp = (*uint64)(unsafe.Pointer(&b.mem[ctrBrk]))
	if err := b.filter.Put(uint32(os.Getpid()), uint32(0)); err != nil {
		return nil, notSupported("open ebpf", fmt.Errorf("watch this process: %w", err))
	}
	if b.rd, err = ringbuf.NewReader(b.ring); err != nil {
		return nil, notSupported("open ebpf", fmt.Errorf("read the ring buffer: %w", err))
	}
	// Drains never wait: every read returns at once when the ring is empty.
	b.rd.SetDeadline(time.Unix(1, 0))
	g := progGen{filter: b.filter, ring: b.ring, ctrs: b.ctrs, inflight: b.inflight, nsDev: uint64(ns.Dev), nsIno: ns.Ino}
	// The exit program first, so that no call is tracked without it.
	exit, err := ebpf.NewProgram(&ebpf.ProgramSpec{Name: "ptl_exit", Type: ebpf.RawTracepoint, Instructions: g.buildExit(), License: ebpfLicense})
	if err != nil {
		return nil, notSupported("open ebpf", fmt.Errorf("%w: load the sys_exit program: %w", errProgram, err))
	}
	b.progs = append(b.progs, exit)
	if b.exitLink, err = link.AttachRawTracepoint(link.RawTracepointOptions{Name: "sys_exit", Program: exit}); err != nil {
		return nil, notSupported("open ebpf", fmt.Errorf("attach to the sys_exit raw tracepoint: %w", err))
	}
	for _, tp := range tps {
		if !tp.found {
			continue
		}
		insns, err := tp.build(&g, tp.off)
		if err != nil {
			return nil, notSupported("open ebpf", fmt.Errorf("%w: %s: %w", errProgram, tp.name, err))
		}
		p, err := ebpf.NewProgram(&ebpf.ProgramSpec{
			Name:         "ptl_" + strings.TrimPrefix(strings.TrimPrefix(tp.name, "sys_"), "enter_"),
			Type:         ebpf.TracePoint,
			Instructions: insns,
			License:      ebpfLicense,
		})
		if err != nil {
			return nil, notSupported("open ebpf", fmt.Errorf("%w: load the %s program: %w", errProgram, tp.name, err))
		}
		b.progs = append(b.progs, p)
		fd, err := attachTracepoint(tp.id, p)
		if err != nil {
			return nil, notSupported("open ebpf", fmt.Errorf("attach to syscalls/%s: %w", tp.name, err))
		}
		b.perfFDs = append(b.perfFDs, fd)
	}
	// Seed the highest break: the exit program records what brk(0) returns.
	unix.Syscall(unix.SYS_BRK, 0, 0, 0)
	ok = true
	return b, nil
}

// errProgram marks a program the kernel refused to load: on a kernel that has the
// features, a bug rather than a missing capability (tests do not skip it).
var errProgram = errors.New("program refused")

// notSupported wraps cause as an error matching ErrNotSupported.
func notSupported(op string, cause error) error {
	return &OpError{Op: op, Err: ErrNotSupported, Cause: cause}
}

// checkBPFCaps reports which of CAP_BPF and CAP_PERFMON the calling thread lacks
// (CAP_SYS_ADMIN stands in for both, as in the kernel).
func checkBPFCaps() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capget: %w", err)
	}
	has := func(c uint) bool { return data[c/32].Effective&(1<<(c%32)) != 0 }
	if has(unix.CAP_SYS_ADMIN) {
		return nil
	}
	var miss []string
	if !has(unix.CAP_BPF) {
		miss = append(miss, "CAP_BPF")
	}
	if !has(unix.CAP_PERFMON) {
		miss = append(miss, "CAP_PERFMON")
	}
	if len(miss) > 0 {
		return fmt.Errorf("the eBPF notifier needs CAP_BPF and CAP_PERFMON; this process lacks %s", strings.Join(miss, " and "))
	}
	return nil
}

// attachTracepoint opens a perf event on the tracepoint id and attaches p to it; the
// program runs on every CPU until the returned descriptor is closed.
func attachTracepoint(id uint64, p *ebpf.Program) (int, error) {
	attr := unix.PerfEventAttr{
		Type:        unix.PERF_TYPE_TRACEPOINT,
		Config:      id,
		Sample_type: unix.PERF_SAMPLE_RAW,
		Sample:      1,
		Wakeup:      1,
	}
	attr.Size = uint32(unsafe.Sizeof(attr))
	fd, err := unix.PerfEventOpen(&attr, -1, 0, -1, unix.PERF_FLAG_FD_CLOEXEC)
	if err != nil {
		return -1, fmt.Errorf("perf_event_open: %w", err)
	}
	if err := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_SET_BPF, p.FD()); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("PERF_EVENT_IOC_SET_BPF: %w", err)
	}
	if err := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_ENABLE, 0); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("PERF_EVENT_IOC_ENABLE: %w", err)
	}
	return fd, nil
}

// release frees everything OpenEBPF made; the programs go first.
func (b *EBPF) release() {
	detach(b.perfFDs, b.exitLink)
	b.perfFDs, b.exitLink = nil, nil
	for _, p := range b.progs {
		p.Close()
	}
	b.progs = nil
	if b.rd != nil {
		b.rd.Close()
		b.rd = nil
	}
	if b.mem != nil {
		unix.Munmap(b.mem)
		b.mem = nil
	}
	for _, m := range []*ebpf.Map{b.filter, b.ring, b.ctrs, b.inflight} {
		if m != nil {
			m.Close()
		}
	}
	if b.maps != nil {
		b.maps.Close()
	}
}

// Kind reports KindEBPF.
func (b *EBPF) Kind() Kind { return KindEBPF }

// Window reports false: every call is recorded before it does anything.
func (b *EBPF) Window() bool { return false }

// Watch counts one watch of [addr, addr+length) (page-aligned). The range must be
// private anonymous memory: shared and file-backed mappings can change through other
// processes, which the programs do not see (ErrUnwatchable); a range not mapped is
// ErrNotMapped.
func (b *EBPF) Watch(addr, length uintptr) error {
	if length == 0 || addr%pageSize != 0 || length%pageSize != 0 || addr+length < addr {
		return &OpError{Op: "watch", Addr: addr, Len: length, Err: ErrBadRange}
	}
	if b.closed.Load() {
		return &OpError{Op: "watch", Addr: addr, Len: length, Err: ErrClosed}
	}
	if err := b.checkPrivateAnon(addr, addr+length); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed.Load() {
		return &OpError{Op: "watch", Addr: addr, Len: length, Err: ErrClosed}
	}
	b.watched.add(addr, addr+length)
	return nil
}

// Unwatch ends one Watch of [addr, addr+length).
func (b *EBPF) Unwatch(addr, length uintptr) error {
	if length == 0 || addr%pageSize != 0 || length%pageSize != 0 || addr+length < addr {
		return &OpError{Op: "unwatch", Addr: addr, Len: length, Err: ErrBadRange}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.closed.Load() {
		b.watched.remove(addr, addr+length)
	}
	return nil
}

// Close detaches the programs and frees the kernel objects once no subscription reads
// them any more; subscriptions see a change that makes them flush everything.
func (b *EBPF) Close() error {
	b.mu.Lock()
	if b.closed.Load() {
		b.mu.Unlock()
		return nil
	}
	b.closed.Store(true)
	b.watched = newWatchSet()
	atomic.AddUint64(b.seqp, 1)
	fds, exit := b.perfFDs, b.exitLink
	b.perfFDs, b.exitLink = nil, nil
	b.mu.Unlock()
	// Detaching waits for grace periods: without the lock, so that drains (which
	// answer "flush everything" from now on) do not wait for it.
	detach(fds, exit)
	b.mu.Lock()
	b.maybeFreeLocked()
	b.mu.Unlock()
	return nil
}

// detach detaches the programs: the entry programs first, so that every call they
// tracked still meets the exit program.
func detach(fds []int, exit link.Link) {
	for _, fd := range fds {
		unix.Close(fd)
	}
	if exit != nil {
		exit.Close()
	}
}

func (b *EBPF) maybeFreeLocked() {
	if b.closed.Load() && b.subs == 0 && !b.freed {
		b.freed = true
		b.release()
	}
}

// Stats returns the backend's counters.
func (b *EBPF) Stats() EBPFStats {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.freed {
		return EBPFStats{}
	}
	return EBPFStats{
		Seq:       atomic.LoadUint64(b.seqp),
		Lost:      atomic.LoadUint64(b.lostp),
		BrkHigh:   atomic.LoadUint64(b.brkp),
		Records:   b.records,
		Published: b.head.Load(),
		Flushes:   b.flushes,
		InFlight:  len(b.calls),
		Programs:  b.programs(),
		Watched:   len(b.watched.spans()),
	}
}

// programs counts the attached programs.
func (b *EBPF) programs() int {
	n := len(b.perfFDs)
	if b.exitLink != nil {
		n++
	}
	return n
}

// checkPrivateAnon checks that [start, end) is mapped, private and anonymous.
func (b *EBPF) checkPrivateAnon(start, end uintptr) error {
	for a := start; a < end; {
		v, err := queryVMA(b.maps, a)
		if err != nil {
			return err
		}
		if (v.shared || v.file) && !ownedCovers(max(a, start), min(v.end, end)) {
			return &OpError{Op: "watch", Addr: start, Len: end - start, Err: ErrUnwatchable,
				Cause: fmt.Errorf("[%#x,%#x) is a shared or file-backed mapping, which other processes can change unseen", v.start, v.end)}
		}
		a = v.end
	}
	return nil
}

func init() {
	openers[KindEBPF] = func() (Backend, error) {
		b, err := OpenEBPF(nil)
		if err != nil {
			return nil, err
		}
		return b, nil
	}
}
