//go:build linux

package driverhooks

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/goportals/goportals/driverhooks/internal/uffd"
	"golang.org/x/sys/unix"
)

// openEBPF opens an eBPF backend, skipping the test with the reason when this
// machine or process cannot have one.
func openEBPF(t testing.TB, opts *EBPFOptions) *EBPF {
	t.Helper()
	b, err := OpenEBPF(opts)
	if errors.Is(err, ErrNotSupported) && !errors.Is(err, errProgram) {
		t.Skip("eBPF notifier unavailable: " + err.Error())
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// ebpfAnonPages maps n fresh private anonymous pages, touched. They are never
// unmapped by a cleanup: the tests unmap, move and replace parts of them, and once a
// page has left, the runtime (or the race detector) may map its own memory at that
// address, which a cleanup munmap of the whole range would tear away. The few pages
// left are the process's until it exits.
func ebpfAnonPages(t testing.TB, n int) uintptr {
	t.Helper()
	a, err := ebpfMmap(0, uintptr(n)*pageSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		ebpfPoke(a+uintptr(i)*pageSize, 1)
	}
	return a
}

// The tests work on memory outside the Go heap through raw system calls.

func ebpfMmap(addr, length uintptr, prot, flags int) (uintptr, error) {
	p, _, e := unix.Syscall6(unix.SYS_MMAP, addr, length, uintptr(prot), uintptr(flags), ^uintptr(0), 0)
	if e != 0 {
		return 0, e
	}
	return p, nil
}

func ebpfMunmap(addr, length uintptr) error {
	if _, _, e := unix.Syscall(unix.SYS_MUNMAP, addr, length, 0); e != 0 {
		return e
	}
	return nil
}

func ebpfMadvise(addr, length uintptr, advice int) error {
	if _, _, e := unix.Syscall(unix.SYS_MADVISE, addr, length, uintptr(advice)); e != 0 {
		return e
	}
	return nil
}

func ebpfPtr(addr uintptr) unsafe.Pointer { return unsafe.Add(unsafe.Pointer(nil), addr) }

func ebpfPoke(addr uintptr, v byte) { *(*byte)(ebpfPtr(addr)) = v }

// ebpfDrained drains s and returns the ranges that overlap [lo, hi), and all.
func ebpfDrained(s Subscription, lo, hi uintptr) (got []span, all bool) {
	all = s.Drain(func(start, end uintptr) {
		if start < hi && end > lo {
			got = append(got, span{start, end})
		}
	})
	return got, all
}

// twice repeats each range: reported at the start of its call and at its return.
func twice(r []span) []span {
	var out []span
	for _, x := range r {
		out = append(out, x, x)
	}
	return out
}

func ebpfWatch(t testing.TB, b Backend, addr, length uintptr) {
	t.Helper()
	if err := b.Watch(addr, length); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Unwatch(addr, length) })
}

// Each unmapping call on watched memory is reported once, with its range.
func TestEBPFCountsUnmappingCalls(t *testing.T) {
	const n = 100
	p := pageSize
	cases := []struct {
		name string
		call func(t *testing.T, a uintptr, i int) span // changes the pages, returns the range
	}{
		{"munmap", func(t *testing.T, a uintptr, i int) span {
			at := a + uintptr(2*i)*p
			if err := ebpfMunmap(at, p); err != nil {
				t.Fatal(err)
			}
			return span{at, at + p}
		}},
		{"madvise-dontneed", func(t *testing.T, a uintptr, i int) span {
			at := a + uintptr(i)*p
			if err := ebpfMadvise(at, 2*p, unix.MADV_DONTNEED); err != nil {
				t.Fatal(err)
			}
			return span{at, at + 2*p}
		}},
		{"mmap-fixed", func(t *testing.T, a uintptr, i int) span {
			at := a + uintptr(i)*p
			r, err := ebpfMmap(at, p, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_FIXED)
			if err != nil || r != at {
				t.Fatalf("mmap fixed: %v", err)
			}
			return span{at, at + p}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := openEBPF(t, nil)
			s := NewNotifier(b).Subscribe()
			defer s.Close()
			a := ebpfAnonPages(t, 2*n+2)
			ebpfWatch(t, b, a, (2*n+2)*p)
			seq0 := b.seq()
			var want []span
			for i := 0; i < n; i++ {
				want = append(want, tc.call(t, a, i))
			}
			if d := b.seq() - seq0; d < n {
				t.Fatalf("the counter moved by %d for %d calls", d, n)
			}
			if !s.Pending() {
				t.Fatalf("nothing pending after %d calls", n)
			}
			got, all := ebpfDrained(s, a, a+(2*n+2)*p)
			if all {
				t.Fatalf("drain asked to flush everything (stats %+v)", b.Stats())
			}
			// Each call is reported when it starts and again when it returns.
			if fmt.Sprint(got) != fmt.Sprint(twice(want)) {
				t.Fatalf("reported %d ranges, want each of %d twice:\n got %x\nwant %x", len(got), len(want), got, want)
			}
			if s.Pending() {
				// Only runtime noise can have arrived since; drain it.
				s.Drain(func(start, end uintptr) {})
			}
		})
	}
}

// The counter moves in the unmapping thread before the call returns, and a
// subscription sees it at once.
func TestEBPFCounterMovesBeforeReturn(t *testing.T) {
	b := openEBPF(t, nil)
	s := NewNotifier(b).Subscribe()
	defer s.Close()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for i := 0; i < 200; i++ {
		a := ebpfAnonPages(t, 1)
		ebpfWatch(t, b, a, pageSize)
		s.Drain(func(start, end uintptr) {})
		before := b.seq()
		if err := ebpfMunmap(a, pageSize); err != nil {
			t.Fatal(err)
		}
		after := b.seq()
		pending := s.Pending()
		if after == before || !pending {
			t.Fatalf("round %d: counter %d -> %d, pending %v right after munmap returned", i, before, after, pending)
		}
		got, _ := ebpfDrained(s, a, a+pageSize)
		if fmt.Sprint(got) != fmt.Sprint(twice([]span{{a, a + pageSize}})) {
			t.Fatalf("round %d: drained %x, want [%#x,%#x)", i, got, a, a+pageSize)
		}
	}
}

// A call in flight keeps the subscriptions pending, and every drain reports its
// range again, until it returns; its return reports the range once more. The
// munmap is held in the kernel by a userfaultfd that nobody reads until the test
// says so.
func TestEBPFCallInFlightStaysPending(t *testing.T) {
	b := openEBPF(t, nil)
	s := NewNotifier(b).Subscribe()
	defer s.Close()
	fd, err := uffd.Open(uffd.UserModeOnly | unix.O_CLOEXEC)
	if err != nil {
		t.Skip("userfaultfd: " + err.Error())
	}
	defer unix.Close(fd)
	if _, err := uffd.Handshake(fd, uffd.FeatureEventUnmap); err != nil {
		t.Skip("userfaultfd unmap events: " + err.Error())
	}
	p := pageSize
	a := ebpfAnonPages(t, 2)
	ebpfWatch(t, b, a, 2*p)
	if err := uffd.Register(fd, a, 2*p, uffd.RegisterModeWP); err != nil {
		t.Skip("userfaultfd register: " + err.Error())
	}
	s.Drain(func(start, end uintptr) {})
	done := make(chan error, 1)
	go func() { done <- ebpfMunmap(a, 2*p) }()
	want := span{a, a + 2*p}
	deadline := time.Now().Add(10 * time.Second)
	for b.Stats().InFlight == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the munmap never showed in flight")
		}
		ebpfDrained(s, a, a+2*p)
		time.Sleep(time.Millisecond)
	}
	for i := 0; i < 3; i++ {
		if !s.Pending() {
			t.Fatalf("drain %d: not pending while the munmap is in flight", i)
		}
		if got, all := ebpfDrained(s, a, a+2*p); all || len(got) == 0 || got[len(got)-1] != want {
			t.Fatalf("drain %d while in flight reported %x (all %v), want [%#x,%#x)", i, got, all, want.start, want.end)
		}
	}
	select {
	case err := <-done:
		t.Fatalf("munmap returned (%v) before its userfaultfd event was read", err)
	default:
	}
	msg := make([]byte, uffd.MsgSize)
	if _, err := unix.Read(fd, msg); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	got, all := ebpfDrained(s, a, a+2*p)
	if all || len(got) == 0 || got[len(got)-1] != want {
		t.Fatalf("the return reported %x (all %v)", got, all)
	}
	if n := b.Stats().InFlight; n != 0 {
		t.Fatalf("%d calls still in flight after the munmap returned", n)
	}
}

// A ring too small for the calls between two drains makes the next drain flush,
// and the backend recovers after it.
func TestEBPFRingOverflowFlushes(t *testing.T) {
	b := openEBPF(t, &EBPFOptions{RingBytes: int(pageSize)})
	s := NewNotifier(b).Subscribe()
	defer s.Close()
	a := ebpfAnonPages(t, 1)
	ebpfWatch(t, b, a, pageSize)
	for i := 0; i < 1000; i++ { // 32 bytes a record: a page holds 128
		if err := ebpfMadvise(a, pageSize, unix.MADV_DONTNEED); err != nil {
			t.Fatal(err)
		}
	}
	if st := b.Stats(); st.Lost == 0 {
		t.Fatalf("1000 calls into a one-page ring lost nothing: %+v", st)
	}
	if _, all := ebpfDrained(s, a, a+pageSize); !all {
		t.Fatalf("an overflowed ring did not ask to flush everything: %+v", b.Stats())
	}
	if err := ebpfMadvise(a, pageSize, unix.MADV_DONTNEED); err != nil {
		t.Fatal(err)
	}
	got, all := ebpfDrained(s, a, a+pageSize)
	if all || len(got) != 2 {
		t.Fatalf("after the flush: ranges %x all %v", got, all)
	}
}

func TestEBPFMremap(t *testing.T) {
	b := openEBPF(t, nil)
	s := NewNotifier(b).Subscribe()
	defer s.Close()
	p := pageSize
	// The source is mapped without a cleanup: mremap moves it away, and by the time a
	// cleanup ran, the runtime (or the race detector) may have mapped something else
	// at its old address. The destination's cleanup unmaps the moved pages.
	src, err := ebpfMmap(0, 2*p, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	ebpfPoke(src, 1)
	ebpfPoke(src+p, 1)
	dst := ebpfAnonPages(t, 2)
	ebpfWatch(t, b, src, 2*p)
	ebpfWatch(t, b, dst, 2*p)
	r, _, e := unix.Syscall6(unix.SYS_MREMAP, src, 2*p, 2*p, unix.MREMAP_MAYMOVE|unix.MREMAP_FIXED, dst, 0)
	if e != 0 || r != dst {
		ebpfMunmap(src, 2*p) // still ours: the move failed
		t.Fatalf("mremap: %v", e)
	}
	got, all := ebpfDrained(s, 0, ^uintptr(0))
	var seen [2]bool
	for _, g := range got {
		seen[0] = seen[0] || g == span{src, src + 2*p}
		seen[1] = seen[1] || g == span{dst, dst + 2*p}
	}
	if all || !seen[0] || !seen[1] {
		t.Fatalf("mremap onto a watched range reported %x (all %v); want the source and the replaced destination", got, all)
	}
}

// A brk below the highest break reports everything between them; growing reports
// nothing.
func TestEBPFBrk(t *testing.T) {
	b := openEBPF(t, nil)
	s := NewNotifier(b).Subscribe()
	defer s.Close()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	brk := func(a uintptr) uintptr {
		r, _, _ := unix.Syscall(unix.SYS_BRK, a, 0, 0)
		return r
	}
	cur := brk(0)
	if h := uintptr(b.Stats().BrkHigh); h < cur {
		t.Fatalf("highest break %#x below the break %#x", h, cur)
	}
	lo := (cur + pageSize - 1) &^ (pageSize - 1)
	hi := lo + 16*pageSize
	s.Drain(func(start, end uintptr) {})
	if got := brk(hi); got != hi {
		t.Skipf("brk(%#x) = %#x: cannot grow the break here", hi, got)
	}
	defer brk(cur)
	if err := b.Watch(lo, hi-lo); err != nil {
		t.Fatal(err)
	}
	defer b.Unwatch(lo, hi-lo)
	if got, all := ebpfDrained(s, lo, hi); len(got) != 0 || all {
		t.Fatalf("growing the break reported %x (all %v)", got, all)
	}
	if h := uintptr(b.Stats().BrkHigh); h < hi {
		t.Fatalf("highest break %#x after growing to %#x", h, hi)
	}
	brk(lo)
	got, all := ebpfDrained(s, lo, hi)
	if all || len(got) != 2 || got[0] != got[1] || got[0].start > lo || got[0].end < hi {
		t.Fatalf("shrinking the break to %#x from %#x reported %x (all %v)", lo, hi, got, all)
	}
}

func TestEBPFShmdtFlushes(t *testing.T) {
	b := openEBPF(t, nil)
	s := NewNotifier(b).Subscribe()
	defer s.Close()
	id, err := unix.SysvShmGet(unix.IPC_PRIVATE, int(pageSize), unix.IPC_CREAT|0o600)
	if err != nil {
		t.Skip("SysV shared memory unavailable: " + err.Error())
	}
	defer unix.SysvShmCtl(id, unix.IPC_RMID, nil)
	mem, err := unix.SysvShmAttach(id, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	s.Drain(func(start, end uintptr) {})
	if err := unix.SysvShmDetach(mem); err != nil {
		t.Fatal(err)
	}
	if _, all := ebpfDrained(s, 0, 0); !all {
		t.Fatal("shmdt did not ask to flush everything")
	}
}

func TestEBPFProcessMadviseFlushes(t *testing.T) {
	b := openEBPF(t, nil)
	s := NewNotifier(b).Subscribe()
	defer s.Close()
	a := ebpfAnonPages(t, 1)
	pidfd, err := unix.PidfdOpen(os.Getpid(), 0)
	if err != nil {
		t.Skip("pidfd_open: " + err.Error())
	}
	defer unix.Close(pidfd)
	s.Drain(func(start, end uintptr) {})
	iov := []unix.Iovec{{Base: (*byte)(ebpfPtr(a))}}
	iov[0].SetLen(int(pageSize))
	// Recorded at entry whatever the call then answers.
	unix.Syscall6(unix.SYS_PROCESS_MADVISE, uintptr(pidfd), uintptr(unsafe.Pointer(&iov[0])), 1, unix.MADV_DONTNEED, 0, 0)
	runtime.KeepAlive(iov)
	if _, all := ebpfDrained(s, 0, 0); !all {
		t.Fatal("process_madvise(MADV_DONTNEED) did not ask to flush everything")
	}
}

// Advice that keeps the pages is not recorded, nor is MAP_FIXED_NOREPLACE.
func TestEBPFIgnoresHarmlessCalls(t *testing.T) {
	b := openEBPF(t, nil)
	s := NewNotifier(b).Subscribe()
	defer s.Close()
	p := pageSize
	a := ebpfAnonPages(t, 4)
	ebpfWatch(t, b, a, 4*p)
	s.Drain(func(start, end uintptr) {})
	for _, adv := range []int{unix.MADV_WILLNEED, unix.MADV_NORMAL, unix.MADV_SEQUENTIAL, unix.MADV_DONTFORK, unix.MADV_DOFORK,
		unix.MADV_WIPEONFORK, unix.MADV_KEEPONFORK, unix.MADV_DONTDUMP, unix.MADV_DODUMP, unix.MADV_COLD, unix.MADV_POPULATE_WRITE} {
		ebpfMadvise(a, 4*p, adv)
	}
	if _, err := ebpfMmap(a, p, unix.PROT_READ, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_FIXED_NOREPLACE); err == nil {
		t.Fatal("MAP_FIXED_NOREPLACE over a mapping succeeded")
	}
	if got, all := ebpfDrained(s, a, a+4*p); len(got) != 0 || all {
		t.Fatalf("harmless calls reported %x (all %v)", got, all)
	}
	for _, adv := range dropAdvice {
		if adv == unix.MADV_HWPOISON || adv == madvSoftOffline || adv == unix.MADV_GUARD_INSTALL {
			continue
		}
		ebpfMadvise(a, 4*p, int(adv))
		if got, _ := ebpfDrained(s, a, a+4*p); len(got) != 2 {
			t.Errorf("madvise advice %d reported %x, want the range", adv, got)
		}
	}
}

// Only watched ranges reach the subscriptions.
func TestEBPFFiltersUnwatched(t *testing.T) {
	b := openEBPF(t, nil)
	s := NewNotifier(b).Subscribe()
	defer s.Close()
	a := ebpfAnonPages(t, 2)
	ebpfWatch(t, b, a, pageSize)
	s.Drain(func(start, end uintptr) {})
	before := b.Stats()
	ebpfMadvise(a+pageSize, pageSize, unix.MADV_DONTNEED)
	if got, _ := ebpfDrained(s, 0, ^uintptr(0)); len(got) != 0 {
		t.Fatalf("an unwatched page was published: %x", got)
	}
	if after := b.Stats(); after.Records <= before.Records {
		t.Fatalf("the unwatched call was not recorded at all: %+v -> %+v", before, after)
	}
}

func TestEBPFWatchRefusesSharedAndFileMappings(t *testing.T) {
	b := openEBPF(t, nil)
	p := pageSize
	sh, err := ebpfMmap(0, p, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	defer ebpfMunmap(sh, p)
	if err := b.Watch(sh, p); !errors.Is(err, ErrUnwatchable) {
		t.Fatalf("Watch of shared memory: %v, want ErrUnwatchable", err)
	}
	f, err := os.CreateTemp(t.TempDir(), "m")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.Truncate(int64(p))
	fm, _, e := unix.Syscall6(unix.SYS_MMAP, 0, p, unix.PROT_READ, unix.MAP_PRIVATE, f.Fd(), 0)
	if e != 0 {
		t.Fatal(e)
	}
	defer ebpfMunmap(fm, p)
	if err := b.Watch(fm, p); !errors.Is(err, ErrUnwatchable) {
		t.Fatalf("Watch of a file mapping: %v, want ErrUnwatchable", err)
	}
	a := ebpfAnonPages(t, 3)
	ebpfMunmap(a+p, p)
	if err := b.Watch(a, 3*p); !errors.Is(err, ErrNotMapped) {
		t.Fatalf("Watch over a hole: %v, want ErrNotMapped", err)
	}
	if err := b.Watch(a, p); err != nil {
		t.Fatal(err)
	}
	b.Unwatch(a, p)
	if err := b.Watch(a+1, p); !errors.Is(err, ErrBadRange) {
		t.Fatalf("unaligned Watch: %v", err)
	}
}

// Both ways of finding a mapping agree.
func TestEBPFScanMapsAgrees(t *testing.T) {
	maps, err := os.Open("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	defer maps.Close()
	a := ebpfAnonPages(t, 2)
	for _, addr := range []uintptr{a, uintptr(unsafe.Pointer(&maps))} {
		v1, err1 := queryVMA(maps, addr)
		v2, err2 := scanMaps(addr)
		if err1 != nil || err2 != nil || v1 != v2 {
			t.Errorf("%#x: PROCMAP_QUERY %+v %v, /proc/self/maps %+v %v", addr, v1, err1, v2, err2)
		}
	}
	if v, _ := parseMapsLine("7f0000000000-7f0000002000 rw-s 00000000 00:01 1234 /dev/zero (deleted)"); !v.shared || !v.file || v.end-v.start != 0x2000 {
		t.Errorf("parsed %+v", v)
	}
}

// Close tells the subscriptions to flush and frees the kernel objects after the
// last one goes.
func TestEBPFCloseFlushes(t *testing.T) {
	b, err := OpenEBPF(nil)
	if errors.Is(err, ErrNotSupported) {
		t.Skip("eBPF notifier unavailable: " + err.Error())
	}
	if err != nil {
		t.Fatal(err)
	}
	n := NewNotifier(b)
	s := n.Subscribe()
	s.Drain(func(start, end uintptr) {})
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if !s.Pending() {
		t.Fatal("nothing pending after Close")
	}
	if !s.Drain(func(start, end uintptr) {}) {
		t.Fatal("drain after Close did not ask to flush everything")
	}
	if err := b.Watch(0x10000, pageSize); !errors.Is(err, ErrClosed) {
		t.Fatalf("Watch after Close: %v", err)
	}
	s.Close()
	if !b.freed {
		t.Fatal("kernel objects not freed after the last subscription")
	}
	s2 := n.Subscribe()
	if !s2.Pending() || !s2.Drain(func(start, end uintptr) {}) {
		t.Fatal("a subscription to a closed backend did not flush")
	}
	s2.Close()
}

// Without CAP_BPF and CAP_PERFMON the opener says why, with an error matching
// ErrNotSupported (so auto selection moves on). Capabilities are per thread: the
// test drops them on a locked thread that is then discarded.
func TestEBPFWithoutCapabilities(t *testing.T) {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		t.Skip("capget: " + err.Error())
	}
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread dies with the goroutine
		d := data
		for _, c := range []uint{unix.CAP_BPF, unix.CAP_PERFMON, unix.CAP_SYS_ADMIN} {
			d[c/32].Effective &^= 1 << (c % 32)
		}
		if err := unix.Capset(&hdr, &d[0]); err != nil {
			done <- fmt.Errorf("capset: %w", err)
			return
		}
		_, err := openers[KindEBPF]()
		done <- err
	}()
	err := <-done
	if err == nil {
		t.Fatal("opened without CAP_BPF and CAP_PERFMON")
	}
	if !errors.Is(err, ErrNotSupported) || !strings.Contains(err.Error(), "CAP_BPF") {
		t.Fatalf("error %q: want ErrNotSupported naming CAP_BPF", err)
	}
}

// Calls of other processes are not recorded.
func TestEBPFIgnoresOtherProcesses(t *testing.T) {
	if os.Getenv("PTL_EBPF_CHILD") != "" {
		for i := 0; i < 2000; i++ {
			if p, err := ebpfMmap(0, pageSize, unix.PROT_READ, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS); err == nil {
				ebpfMunmap(p, pageSize)
			}
		}
		return
	}
	b := openEBPF(t, nil)
	before := b.seq()
	cmd := exec.Command(os.Args[0], "-test.run=^TestEBPFIgnoresOtherProcesses$")
	cmd.Env = append(os.Environ(), "PTL_EBPF_CHILD=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	// The child's 2000 munmaps must not count; this process's own runtime may
	// unmap a little meanwhile.
	if d := b.seq() - before; d >= 500 {
		t.Fatalf("the counter moved by %d while a child process unmapped 2000 times", d)
	}
}

func TestPageSpan(t *testing.T) {
	p := uint64(pageSize)
	for _, c := range []struct{ s, e, ws, we uint64 }{
		{p + 1, 2*p + 1, p, 3 * p},
		{5 * p, 5 * p, 5 * p, 5 * p},
		{p, 0, p, ^uint64(0) &^ (p - 1)},
		{p, ^uint64(0) - 2, p, ^uint64(0) &^ (p - 1)},
	} {
		if s, e := pageSpan(c.s, c.e); s != c.ws || e != c.we {
			t.Errorf("pageSpan(%#x, %#x) = %#x, %#x; want %#x, %#x", c.s, c.e, s, e, c.ws, c.we)
		}
	}
}

func TestFieldOffsets(t *testing.T) {
	const format = "name: sys_enter_madvise\nID: 726\nformat:\n" +
		"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n" +
		"\tfield:int __syscall_nr;\toffset:8;\tsize:4;\tsigned:1;\n" +
		"\tfield:unsigned long start;\toffset:16;\tsize:8;\tsigned:0;\n" +
		"\tfield:const struct iovec * vec;\toffset:24;\tsize:8;\tsigned:0;\n" +
		"\tfield:int behavior;\toffset:32;\tsize:8;\tsigned:0;\n"
	off, err := fieldOffsets(format, []string{"start", "vec", "behavior"})
	if err != nil || off["start"] != 16 || off["vec"] != 24 || off["behavior"] != 32 {
		t.Fatalf("%v %v", off, err)
	}
	if _, err := fieldOffsets(format, []string{"__syscall_nr"}); err == nil {
		t.Fatal("a 4-byte field was accepted")
	}
	if _, err := fieldOffsets(format, []string{"len"}); err == nil {
		t.Fatal("a missing field was accepted")
	}
}

// BenchmarkEBPFPending is the cost Pending adds to every cache lookup.
func BenchmarkEBPFPending(b *testing.B) {
	be := openEBPF(b, nil)
	s := NewNotifier(be).Subscribe()
	defer s.Close()
	s.Drain(func(start, end uintptr) {})
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if s.Pending() {
			s.Drain(func(start, end uintptr) {})
		}
	}
}

// BenchmarkEBPFMunmap is mmap+munmap of one page with and without the programs.
func BenchmarkEBPFMunmap(b *testing.B) {
	run := func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			p, err := ebpfMmap(0, pageSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
			if err != nil {
				b.Fatal(err)
			}
			ebpfMunmap(p, pageSize)
		}
	}
	b.Run("plain", run)
	b.Run("ebpf", func(b *testing.B) {
		be := openEBPF(b, nil)
		s := NewNotifier(be).Subscribe()
		defer s.Close()
		b.ResetTimer()
		run(b)
		b.StopTimer()
		s.Drain(func(start, end uintptr) {})
	})
}
