//go:build linux && cgo

package driverhooks

import (
	"errors"
	"os"
	"runtime"
	"runtime/debug"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

func openMonitor(t *testing.T) *Monitor {
	t.Helper()
	m, err := Open()
	if errors.Is(err, ErrNotSupported) {
		t.Skip("userfaultfd unavailable: " + err.Error())
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.Close(); err != nil {
			t.Error(err)
		}
	})
	return m
}

func mmapAnon(t *testing.T, pages int) []byte {
	t.Helper()
	b, err := unix.Mmap(-1, 0, pages*int(pageSize), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	for i := range b {
		b[i] = byte(i)
	}
	return b
}

func addrOf(b []byte) uintptr { return uintptr(unsafe.Pointer(&b[0])) }

// collect drains s and returns the ranges it reported.
func collect(s Subscription) (got []span, all bool) {
	all = s.Drain(func(a, b uintptr) { got = append(got, span{a, b}) })
	return got, all
}

func overlaps(got []span, a, b uintptr) bool {
	for _, r := range got {
		if r.start < b && a < r.end {
			return true
		}
	}
	return false
}

func TestMonitorEvents(t *testing.T) {
	m := openMonitor(t)
	n := NewNotifier(m)
	const pages = 8
	cases := []struct {
		name   string
		change func(t *testing.T, b []byte) (uintptr, uintptr) // returns the range that must be reported
	}{
		{"munmap", func(t *testing.T, b []byte) (uintptr, uintptr) {
			a := addrOf(b)
			if err := unix.Munmap(b); err != nil {
				t.Fatal(err)
			}
			return a, a + uintptr(len(b))
		}},
		{"partial-munmap", func(t *testing.T, b []byte) (uintptr, uintptr) {
			a := addrOf(b) + 2*pageSize
			if _, _, e := unix.Syscall(unix.SYS_MUNMAP, a, 2*pageSize, 0); e != 0 {
				t.Fatal(e)
			}
			return a, a + 2*pageSize
		}},
		{"madv-dontneed", func(t *testing.T, b []byte) (uintptr, uintptr) {
			if err := unix.Madvise(b[pageSize:3*pageSize], unix.MADV_DONTNEED); err != nil {
				t.Fatal(err)
			}
			return addrOf(b) + pageSize, addrOf(b) + 3*pageSize
		}},
		{"madv-free", func(t *testing.T, b []byte) (uintptr, uintptr) {
			if err := unix.Madvise(b, unix.MADV_FREE); err != nil {
				t.Fatal(err)
			}
			return addrOf(b), addrOf(b) + uintptr(len(b))
		}},
		{"mremap", func(t *testing.T, b []byte) (uintptr, uintptr) {
			a := addrOf(b)
			nb, err := unix.Mremap(b, 2*len(b), unix.MREMAP_MAYMOVE)
			if err != nil {
				t.Fatal(err)
			}
			if addrOf(nb) == a {
				t.Skip("mremap grew in place; nothing moved")
			}
			t.Cleanup(func() { unix.Munmap(nb) })
			return a, a + uintptr(len(b))
		}},
		{"mmap-fixed", func(t *testing.T, b []byte) (uintptr, uintptr) {
			a := addrOf(b) + pageSize
			r, _, e := unix.Syscall6(unix.SYS_MMAP, a, pageSize, unix.PROT_READ|unix.PROT_WRITE,
				unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_FIXED, ^uintptr(0), 0)
			if e != 0 || r != a {
				t.Fatal(e)
			}
			return a, a + pageSize
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := n.Subscribe()
			defer s.Close()
			b := mmapAnon(t, pages)
			a := addrOf(b)
			if err := n.Watch(a, uintptr(len(b))); err != nil {
				t.Fatal(err)
			}
			if s.Pending() {
				if got, all := collect(s); all || len(got) != 0 {
					t.Fatalf("spurious events before the change: %v all=%v", got, all)
				}
			}
			lo, hi := c.change(t, b)
			if !s.Pending() {
				t.Fatal("change returned but the subscription is not pending")
			}
			got, all := collect(s)
			if !all && !overlaps(got, lo, hi) {
				t.Fatalf("drained %v, want a range overlapping [%#x,%#x)", got, lo, hi)
			}
			if s.Pending() {
				t.Fatal("still pending after drain")
			}
			n.Unwatch(a, uintptr(len(b)))
			if c.name == "partial-munmap" {
				// Unmap only the pieces still ours: the hole may hold the runtime's
				// memory by now.
				unix.Syscall(unix.SYS_MUNMAP, a, 2*pageSize, 0)
				unix.Syscall(unix.SYS_MUNMAP, a+4*pageSize, uintptr(len(b))-4*pageSize, 0)
			} else {
				unix.Munmap(b) // fails harmlessly where the case unmapped or moved b through unix
			}
		})
	}
	if st := m.Stats(); st.Errors != 0 || st.Pagefaults != 0 {
		t.Errorf("reader stats %+v", st)
	}
}

func TestExplicitInvalidate(t *testing.T) {
	n := NewNotifier(nil)
	s := n.Subscribe()
	defer s.Close()
	if s.Pending() {
		t.Fatal("pending before any event")
	}
	n.Invalidate(0x10000, 0x2000)
	if !s.Pending() {
		t.Fatal("not pending after Invalidate")
	}
	got, all := collect(s)
	if all || len(got) != 1 || got[0] != (span{0x10000, 0x12000}) {
		t.Fatalf("drained %v all=%v", got, all)
	}
	for i := 0; i < maxPendingExplicit+1; i++ {
		n.Invalidate(uintptr(i)*pageSize, pageSize)
	}
	if _, all := collect(s); !all {
		t.Fatal("overflowing the explicit queue must ask for a full flush")
	}
	if err := n.Watch(0x10000, pageSize); !errors.Is(err, ErrNotSupported) {
		t.Fatalf("Watch without a monitor: %v, want ErrNotSupported", err)
	}
}

func TestPendingAllocatesNothing(t *testing.T) {
	m := openMonitor(t)
	s := NewNotifier(m).Subscribe()
	defer s.Close()
	if a := testing.AllocsPerRun(100, func() { s.Pending() }); a != 0 {
		t.Fatalf("Pending allocates %v", a)
	}
}

func TestWatchErrors(t *testing.T) {
	m := openMonitor(t)
	if err := m.Watch(1, pageSize); !errors.Is(err, ErrBadRange) {
		t.Errorf("unaligned watch: %v", err)
	}
	b := mmapAnon(t, 2)
	defer unix.Munmap(b)
	m2 := openMonitor(t)
	if err := m.Watch(addrOf(b), 2*pageSize); err != nil {
		t.Fatal(err)
	}
	if err := m2.Watch(addrOf(b), 2*pageSize); !errors.Is(err, ErrBusy) || !errors.Is(err, ErrNotSupported) {
		t.Errorf("second monitor on the same range: %v, want ErrBusy", err)
	}
	f, err := os.CreateTemp(t.TempDir(), "fb")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.Truncate(int64(pageSize))
	fm, err := unix.Mmap(int(f.Fd()), 0, int(pageSize), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(fm)
	if err := m.Watch(addrOf(fm), pageSize); !errors.Is(err, ErrNotSupported) {
		t.Errorf("file-backed mapping: %v, want an error matching ErrNotSupported", err)
	}
}

// With GOMAXPROCS=1 the scavenger's madvise holds the only P while it waits for the
// reader; a Go reader would deadlock here (see the package documentation).
func TestNoDeadlockGOMAXPROCS1(t *testing.T) {
	m := openMonitor(t)
	n := NewNotifier(m)
	s := n.Subscribe()
	defer s.Close()
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 200; i++ {
			buf := make([]byte, 1<<20)
			buf[0] = 1
			p := uintptr(unsafe.Pointer(&buf[0]))
			st := (p + pageSize - 1) &^ (pageSize - 1)
			_ = n.Watch(st, 64*pageSize)
			runtime.KeepAlive(buf)
			buf = nil
			debug.FreeOSMemory()
			s.Drain(func(a, b uintptr) {})
		}
	}()
	select {
	case <-done:
		if st := m.Stats(); st.Events == 0 {
			t.Fatalf("FreeOSMemory produced no userfaultfd event: the test did not exercise the scavenger path (%+v)", st)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("watchdog: FreeOSMemory with watched heap ranges did not finish in 2 minutes (deadlock)")
	}
}

func TestSubscribeAfterClose(t *testing.T) {
	m, err := Open()
	if errors.Is(err, ErrNotSupported) {
		t.Skip("userfaultfd unavailable: " + err.Error())
	}
	if err != nil {
		t.Fatal(err)
	}
	n := NewNotifier(m)
	live := n.Subscribe()
	m.Close()
	if !live.Pending() {
		t.Fatal("closing the monitor did not make its subscriptions pending")
	}
	if _, all := collect(live); !all {
		t.Fatal("a subscription of a closed monitor must flush everything")
	}
	live.Close()
	late := n.Subscribe()
	defer late.Close()
	if !late.Pending() {
		t.Fatal("a subscription to a closed monitor must start pending")
	}
	if _, all := collect(late); !all {
		t.Fatal("a subscription to a closed monitor must flush everything")
	}
	if err := n.Watch(0x10000, pageSize); !errors.Is(err, ErrClosed) {
		t.Fatalf("Watch on a closed monitor: %v", err)
	}
}

func TestWatchedBookkeeping(t *testing.T) {
	m := openMonitor(t)
	b := mmapAnon(t, 6)
	defer unix.Munmap(b)
	a := addrOf(b)
	if err := m.Watch(a, 2*pageSize); err != nil {
		t.Fatal(err)
	}
	if err := m.Watch(a+2*pageSize, 4*pageSize); err != nil {
		t.Fatal(err)
	}
	if w := m.Stats().Watched; w != 1 {
		t.Fatalf("adjacent watches: %d ranges, want 1", w)
	}
	if err := m.Unwatch(a+2*pageSize, 2*pageSize); err != nil {
		t.Fatal(err)
	}
	if w := m.Stats().Watched; w != 2 {
		t.Fatalf("after unwatching the middle: %d ranges, want 2", w)
	}
	m.Unwatch(a, 6*pageSize)
	if w := m.Stats().Watched; w != 0 {
		t.Fatalf("after unwatching all: %d ranges", w)
	}
}

// Two watchers of one range: the first Unwatch must leave it watched.
func TestWatchCounted(t *testing.T) {
	m := openMonitor(t)
	n := NewNotifier(m)
	s := n.Subscribe()
	defer s.Close()
	b := mmapAnon(t, 4)
	defer unix.Munmap(b)
	a := addrOf(b)
	for i := 0; i < 2; i++ {
		if err := n.Watch(a, 4*pageSize); err != nil {
			t.Fatal(err)
		}
	}
	if err := n.Unwatch(a, 4*pageSize); err != nil {
		t.Fatal(err)
	}
	if err := unix.Madvise(b[:pageSize], unix.MADV_DONTNEED); err != nil {
		t.Fatal(err)
	}
	if got, all := collect(s); !all && !overlaps(got, a, a+pageSize) {
		t.Fatal("the range stopped being watched while a watcher remained")
	}
	if err := n.Unwatch(a, 4*pageSize); err != nil {
		t.Fatal(err)
	}
	if w := m.Stats().Watched; w != 0 {
		t.Fatalf("%d ranges still watched", w)
	}
	if err := unix.Madvise(b[:pageSize], unix.MADV_DONTNEED); err != nil {
		t.Fatal(err)
	}
	if s.Pending() {
		if got, _ := collect(s); overlaps(got, a, a+4*pageSize) {
			t.Fatal("an unwatched range still reports events")
		}
	}
}

// A poll that keeps failing must not trap the reader: Close still stops it. poll
// fails with EINVAL when it is given more descriptors than RLIMIT_NOFILE allows, so
// the test lowers the soft limit to 1 while the reader waits, wakes the reader with
// one event (its next poll then fails, and fails again on every retry), checks that
// a later event is still read (an unmapping thread is not left waiting), and closes
// the monitor with the limit still low.
func TestCloseWithPersistentPollError(t *testing.T) {
	m, err := Open()
	if errors.Is(err, ErrNotSupported) {
		t.Skip("userfaultfd unavailable: " + err.Error())
	}
	if err != nil {
		t.Fatal(err)
	}
	b := mmapAnon(t, 2)
	defer unix.Munmap(b)
	if err := m.Watch(addrOf(b), 2*pageSize); err != nil {
		t.Fatal(err)
	}
	var old unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	low := old
	low.Cur = 1
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &low); err != nil {
		t.Fatal(err)
	}
	restored := false
	restore := func() {
		if !restored {
			restored = true
			if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &old); err != nil {
				t.Error(err)
			}
		}
	}
	defer restore()
	// The event wakes the reader; it reads it (releasing madvise), then polls again.
	if err := unix.Madvise(b[:pageSize], unix.MADV_DONTNEED); err != nil {
		restore()
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for m.Stats().Errors == 0 {
		if time.Now().After(deadline) {
			restore()
			t.Fatalf("the reader's poll never failed under RLIMIT_NOFILE=1: %+v", m.Stats())
		}
		time.Sleep(time.Millisecond)
	}
	if st := m.Stats(); st.LastErrno != int(unix.EINVAL) {
		restore()
		t.Fatalf("reader error %v, want EINVAL from poll: %+v", unix.Errno(st.LastErrno), st)
	}
	// Events that arrive while poll fails are still read: madvise returns.
	released := make(chan error, 1)
	go func() { released <- unix.Madvise(b[pageSize:], unix.MADV_DONTNEED) }()
	select {
	case err := <-released:
		if err != nil {
			restore()
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		restore()
		<-released
		t.Fatal("madvise on a watched range waited 5 s for a reader whose poll fails")
	}
	done := make(chan error, 1)
	go func() { done <- m.Close() }()
	select {
	case err := <-done:
		restore()
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		// Let the reader recover so that the process can go on.
		restore()
		<-done
		t.Fatal("Close did not return within 5 s while poll kept failing")
	}
}

// The Go view of the memory the reader shares (ringSlot, readerShared) must match
// the C declarations in reader.h field for field.
func TestReaderLayoutMatchesC(t *testing.T) {
	c := cReaderLayout()
	var slot ringSlot
	var sh readerShared
	checks := []struct {
		name    string
		goV, cV uintptr
	}{
		{"sizeof(struct ptl_slot)", unsafe.Sizeof(slot), c.SlotSize},
		{"ptl_slot.seq", unsafe.Offsetof(slot.seq), c.SlotSeq},
		{"ptl_slot.start", unsafe.Offsetof(slot.start), c.SlotStart},
		{"ptl_slot.end", unsafe.Offsetof(slot.end), c.SlotEnd},
		{"ptl_reader.seq", unsafe.Offsetof(sh.seq), c.Seq},
		{"ptl_reader.head", unsafe.Offsetof(sh.head), c.Head},
		{"ptl_reader.events", unsafe.Offsetof(sh.events), c.Events},
		{"ptl_reader.pagefaults", unsafe.Offsetof(sh.pagefaults), c.Pagefaults},
		{"ptl_reader.errors", unsafe.Offsetof(sh.errors), c.Errors},
		{"ptl_reader.last_errno", unsafe.Offsetof(sh.lastErrno), c.LastErrno},
	}
	for _, k := range checks {
		if k.goV != k.cV {
			t.Errorf("%s: Go %d, C %d", k.name, k.goV, k.cV)
		}
	}
	if unsafe.Sizeof(sh) > c.Ring {
		t.Errorf("Go's readerShared (%d bytes) runs into the ring at offset %d", unsafe.Sizeof(sh), c.Ring)
	}
	// seq alone on its cache line; slots and counters 8-byte aligned for atomics.
	if c.Seq != 0 || c.Head < cacheLine || c.Align%cacheLine != 0 {
		t.Errorf("seq at %d, head at %d, reader aligned to %d: seq must have a cache line of its own", c.Seq, c.Head, c.Align)
	}
	if c.Ring%cacheLine != 0 || c.SlotSize%8 != 0 {
		t.Errorf("ring at offset %d, slots of %d bytes", c.Ring, c.SlotSize)
	}
	if c.MsgMax < uffdMsgSize {
		t.Errorf("the reader's message buffer stride %d is smaller than a uffd_msg (%d)", c.MsgMax, uffdMsgSize)
	}
	m := openMonitor(t)
	if a := uintptr(unsafe.Pointer(m.shared())); a%cacheLine != 0 {
		t.Errorf("reader state at %#x is not cache-line aligned", a)
	}
	if p := m.readerPageSize(); p != uintptr(os.Getpagesize()) {
		t.Errorf("the reader works in pages of %d bytes, the system's are %d", p, os.Getpagesize())
	}
}

// An ABI the reader cannot parse is refused when the reader is made, not clamped.
func TestReaderRefusesBadABI(t *testing.T) {
	good := readerABI{msgSize: uffdMsgSize, argOff: uffdArgOff, slots: ringSlots}
	if err := checkReaderABI(good); err != nil {
		t.Fatalf("the real ABI was refused: %v", err)
	}
	bad := map[string]readerABI{
		"zero message size":        {msgSize: 0, argOff: uffdArgOff, slots: ringSlots},
		"message shorter than arg": {msgSize: uffdArgOff + 16, argOff: uffdArgOff, slots: ringSlots},
		"message over the buffer":  {msgSize: 128, argOff: uffdArgOff, slots: ringSlots},
		"unaligned message size":   {msgSize: uffdMsgSize + 4, argOff: uffdArgOff, slots: ringSlots},
		"no slots":                 {msgSize: uffdMsgSize, argOff: uffdArgOff, slots: 0},
		"slots not a power of 2":   {msgSize: uffdMsgSize, argOff: uffdArgOff, slots: 3 << 10},
	}
	for name, abi := range bad {
		if err := checkReaderABI(abi); !errors.Is(err, unix.EINVAL) {
			t.Errorf("%s (%+v): %v, want EINVAL", name, abi, err)
		}
	}
}
