//go:build linux

package soft

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/goportals/goportals/internal/verbs"
)

// Tests of how registered memory is pinned. A registration must behave like an
// HCA's: it holds long-term references to the page frames, so madvise(DONTNEED)
// on the range succeeds (the virtual range gets new frames on the next touch while
// the registration keeps the old ones alive), and it is charged to RLIMIT_MEMLOCK.

// openForPin opens a context and registers cleanup.
func openForPin(t testing.TB) (*Context, verbs.PD) {
	t.Helper()
	c, err := Open()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	pd, err := c.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	return c, pd
}

// anonPages maps n private anonymous pages and touches each for writing.
func anonPages(t testing.TB, n int) []byte {
	t.Helper()
	mem, err := unix.Mmap(-1, 0, n*pageSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Munmap(mem) })
	for i := 0; i < len(mem); i += pageSize {
		mem[i] = byte(i/pageSize + 1)
	}
	return mem
}

// pageAligned returns the whole pages inside b (nil if there are none).
func pageAligned(b []byte) []byte {
	a := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	start := (a + pageSize - 1) &^ (pageSize - 1)
	end := (a + uintptr(len(b))) &^ (pageSize - 1)
	if end <= start {
		return nil
	}
	return b[start-a : end-a]
}

// TestMadviseOnRegistered: madvise(MADV_DONTNEED) on registered memory succeeds
// every time (an mlock pin makes it fail with EINVAL), on Go heap memory and on
// mapped pages, at several sizes.
func TestMadviseOnRegistered(t *testing.T) {
	c, pd := openForPin(t)
	if c.PinMethod() != PinIOUring {
		t.Skipf("pinning with %s (%s): only io_uring pins allow madvise on registered memory", c.PinMethod(), c.pinWhy)
	}
	failed := 0
	var first error
	for i := range 100 {
		pages := 2 + i%7*37 // 2 .. 224 pages
		var mem []byte
		if i%2 == 0 {
			mem = make([]byte, pages*pageSize+i) // Go heap, not page aligned
		} else {
			mem = anonPages(t, pages)
		}
		m, err := pd.RegMR(mem, rw)
		if err != nil {
			t.Fatalf("register %d bytes: %v", len(mem), err)
		}
		if err := unix.Madvise(pageAligned(mem), unix.MADV_DONTNEED); err != nil {
			failed++
			if first == nil {
				first = fmt.Errorf("madvise of %d registered bytes: %w", len(mem), err)
			}
		}
		if err := m.Dereg(); err != nil {
			t.Fatal(err)
		}
		runtime.KeepAlive(mem)
	}
	if failed > 0 {
		t.Fatalf("madvise(DONTNEED) failed %d of 100 times on registered memory; first: %v", failed, first)
	}
}

// Page-frame oracle: /proc/self/pagemap gives the frame of a virtual page (to
// root), /proc/kpagecount how many mappings a frame has and /proc/kpageflags its
// state. A frame that only a pin holds is mapped nowhere yet still allocated: it
// keeps its anonymous-page flag, which the allocator clears when the frame is freed.
const (
	kpfBuddy = 10
	kpfAnon  = 12
	pfnMask  = 1<<55 - 1
)

func readU64(t testing.TB, path string, idx uint64) uint64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Skipf("frame oracle: %v", err)
	}
	defer f.Close()
	var b [8]byte
	if _, err := f.ReadAt(b[:], int64(idx)*8); err != nil {
		t.Skipf("frame oracle: %s: %v", path, err)
	}
	return binary.LittleEndian.Uint64(b[:])
}

func framesOf(t testing.TB, mem []byte) []uint64 {
	t.Helper()
	a := uintptr(unsafe.Pointer(unsafe.SliceData(mem)))
	out := make([]uint64, len(mem)/pageSize)
	for i := range out {
		out[i] = readU64(t, "/proc/self/pagemap", uint64(a/pageSize)+uint64(i)) & pfnMask
	}
	return out
}

// TestPinnedFrameSurvivesRefault: the frames recorded at registration stay
// allocated while the region is registered, even after madvise(DONTNEED) dropped
// them from the address space; the next touch therefore maps other frames, every
// time, so the registration's page-map snapshot stays exact (a stale entry is told
// apart from a fresh one by its frames, 50 of 50).
func TestPinnedFrameSurvivesRefault(t *testing.T) {
	c, pd := openForPin(t)
	if c.PinMethod() != PinIOUring {
		t.Skipf("pinning with %s (%s): mlock holds no frame", c.PinMethod(), c.pinWhy)
	}
	const pages = 16
	for iter := range 50 {
		mem := anonPages(t, pages)
		before := framesOf(t, mem)
		if before[0] == 0 {
			t.Skip("frame numbers are hidden (reading them needs CAP_SYS_ADMIN)")
		}
		reg, err := pd.RegMR(mem, rw)
		if err != nil {
			t.Fatal(err)
		}
		m := reg.(*mr)
		if len(m.xlate) != pages {
			t.Fatalf("snapshot of %d pages, want %d", len(m.xlate), pages)
		}
		for i, e := range m.xlate {
			if e&pfnMask != before[i] {
				t.Fatalf("iteration %d page %d: snapshot frame %#x, mapped frame %#x", iter, i, e&pfnMask, before[i])
			}
		}
		if err := unix.Madvise(mem, unix.MADV_DONTNEED); err != nil {
			t.Fatalf("iteration %d: madvise: %v", iter, err)
		}
		for i := 0; i < len(mem); i += pageSize {
			if mem[i] != 0 {
				t.Fatalf("iteration %d: page %d kept its data after DONTNEED", iter, i/pageSize)
			}
			mem[i] = 0xee
		}
		after := framesOf(t, mem)
		for i := range pages {
			old := m.xlate[i] & pfnMask
			if after[i] == old {
				t.Fatalf("iteration %d page %d: the refault got the pinned frame %#x back", iter, i, old)
			}
			if n := readU64(t, "/proc/kpagecount", old); n != 0 {
				t.Fatalf("iteration %d page %d: pinned frame %#x still mapped %d times", iter, i, old, n)
			}
			fl := readU64(t, "/proc/kpageflags", old)
			if fl&(1<<kpfAnon) == 0 || fl&(1<<kpfBuddy) != 0 {
				t.Fatalf("iteration %d page %d: pinned frame %#x looks freed (flags %#x)", iter, i, old, fl)
			}
		}
		if err := reg.Dereg(); err != nil {
			t.Fatal(err)
		}
	}
}

// vmStatus returns a /proc/self/status field in KiB.
func vmStatus(t testing.TB, field string) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, field+":"); ok {
			v, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")))
			if err != nil {
				t.Fatalf("%s: %v", l, err)
			}
			return v
		}
	}
	t.Fatalf("no %s in /proc/self/status", field)
	return 0
}

// TestPinAccounting: an io_uring registration shows as pinned memory (VmPin) and
// takes no lock (VmLck); the mlock fallback shows as locked memory. Both give it
// back at Dereg. The test is not parallel: it reads process-wide counters.
func TestPinAccounting(t *testing.T) {
	for _, method := range []string{PinIOUring, PinMlock} {
		t.Run(method, func(t *testing.T) {
			c, err := openPinned(method)
			if errors.Is(err, verbs.ErrNotSupported) {
				t.Skipf("%s: %v", method, err)
			}
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if got := c.PinMethod(); got != method {
				t.Fatalf("PinMethod %q, want %q", got, method)
			}
			pd, err := c.AllocPD()
			if err != nil {
				t.Fatal(err)
			}
			const size = 1 << 20
			mem := anonPages(t, size/pageSize)
			pin0, lck0 := vmStatus(t, "VmPin"), vmStatus(t, "VmLck")
			m, err := pd.RegMR(mem, rw)
			if err != nil {
				t.Fatal(err)
			}
			pin1, lck1 := vmStatus(t, "VmPin"), vmStatus(t, "VmLck")
			want, other := pin1-pin0, lck1-lck0
			if method == PinMlock {
				want, other = other, want
			}
			if want < size/1024 || other != 0 {
				t.Errorf("after registering 1 MiB: VmPin %+d KiB, VmLck %+d KiB", pin1-pin0, lck1-lck0)
			}
			if err := m.Dereg(); err != nil {
				t.Fatal(err)
			}
			if pin2, lck2 := vmStatus(t, "VmPin"), vmStatus(t, "VmLck"); pin2 != pin0 || lck2 != lck0 {
				t.Errorf("after Dereg: VmPin %d KiB (was %d), VmLck %d KiB (was %d)", pin2, pin0, lck2, lck0)
			}
		})
	}
}

// TestPinEnv: PTL_SOFT_PIN chooses the pin method; an unknown value is refused.
func TestPinEnv(t *testing.T) {
	t.Setenv(pinEnv, "mlock")
	c, err := Open()
	if err != nil {
		t.Fatal(err)
	}
	if got := c.PinMethod(); got != PinMlock {
		t.Errorf("%s=mlock: PinMethod %q", pinEnv, got)
	}
	c.Close()
	t.Setenv(pinEnv, "")
	c, err = Open()
	if err != nil {
		t.Fatal(err)
	}
	if uringDisabled() == 0 && c.PinMethod() != PinIOUring {
		t.Errorf("io_uring is enabled here but the default context pins with %q (%s)", c.PinMethod(), c.pinWhy)
	}
	c.Close()
	t.Setenv(pinEnv, "mmap")
	if c, err := Open(); !errors.Is(err, verbs.ErrInvalidArgument) {
		if err == nil {
			c.Close()
		}
		t.Errorf("%s=mmap: Open returned %v, want ErrInvalidArgument", pinEnv, err)
	}
}

// uringDisabled reads /proc/sys/kernel/io_uring_disabled (0 when absent).
func uringDisabled() int {
	b, err := os.ReadFile("/proc/sys/kernel/io_uring_disabled")
	if err != nil {
		return 0
	}
	v, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return v
}

// TestPinReadOnlyFallsBack: io_uring pins for writing and refuses read-only or
// file-backed memory (EFAULT), which an HCA registers without local write. Such a
// region is pinned with mlock instead, and its data still moves.
func TestPinReadOnlyFallsBack(t *testing.T) {
	c, pd := openForPin(t)
	if c.PinMethod() != PinIOUring {
		t.Skipf("pinning with %s", c.PinMethod())
	}
	mem := anonPages(t, 4)
	copy(mem, "read-only payload")
	if err := unix.Mprotect(mem, unix.PROT_READ); err != nil {
		t.Fatal(err)
	}
	reg, err := pd.RegMR(mem, verbs.AccessRemoteRead)
	if err != nil {
		t.Fatalf("register read-only memory: %v", err)
	}
	if m := reg.(*mr); m.pin.slots != nil || !m.pin.locked {
		t.Errorf("read-only region pinned with slots %v, locked %v: want the mlock fallback", m.pin.slots, m.pin.locked)
	}

	f, err := os.CreateTemp(t.TempDir(), "mapped")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(4 * pageSize); err != nil {
		t.Fatal(err)
	}
	fm, err := unix.Mmap(int(f.Fd()), 0, 4*pageSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(fm)
	freg, err := pd.RegMR(fm, rw)
	if err != nil {
		t.Fatalf("register a shared file mapping: %v", err)
	}

	// A peer context reads the read-only region.
	a, b := pairForPin(t)
	rpd := b.pd
	ro, err := rpd.RegMR(mem, verbs.AccessRemoteRead)
	if err != nil {
		t.Fatal(err)
	}
	dst := make([]byte, 64)
	lm := regLocal(t, a, dst, rw)
	if wc := post(t, a, verbs.SendWR{Opcode: verbs.OpRDMARead, SG: sge(lm, 17), RemoteAddr: ro.Addr(), RKey: ro.RKey()}); wc.Status != verbs.StatusSuccess {
		t.Fatalf("read from a read-only region: %v", wc.Status)
	}
	if !bytes.Equal(dst[:17], mem[:17]) {
		t.Fatalf("read %q", dst[:17])
	}
	for _, r := range []verbs.MR{reg, freg, ro} {
		if err := r.Dereg(); err != nil {
			t.Fatal(err)
		}
	}
}

// pairForPin connects two sides in this process.
func pairForPin(t testing.TB) (*side, *side) {
	t.Helper()
	a, err := openSide()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.ctx.Close() })
	b, err := openSide()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.ctx.Close() })
	if err := a.qp.Connect(b.qp.Address()); err != nil {
		t.Fatal(err)
	}
	if err := b.qp.Connect(a.qp.Address()); err != nil {
		t.Fatal(err)
	}
	return a, b
}

// freeSlots returns the number of empty slots in c's table.
func (c *Context) freeSlots() int {
	c.uring.mu.Lock()
	defer c.uring.mu.Unlock()
	return len(c.uring.free)
}

// TestPinSplitsSlots: a region larger than one slot holds is pinned in several
// (the kernel bounds a registered buffer at 1 GiB), every page of it is pinned,
// and Dereg empties them all; a full table refuses a registration with
// ErrNoResources and leaves nothing behind.
func TestPinSplitsSlots(t *testing.T) {
	c, pd := openForPin(t)
	if c.PinMethod() != PinIOUring {
		t.Skipf("pinning with %s", c.PinMethod())
	}
	// A table of this test's own, with slots of 16 pages.
	own, err := newUringPinner(64)
	if err != nil {
		t.Fatal(err)
	}
	defer own.close()
	own.slotMax = 16 * pageSize
	c.life.Lock()
	c.uring = own
	c.life.Unlock()
	defer c.Close() // before own.close
	free0 := c.freeSlots()
	mem := anonPages(t, 16*5+3)
	pin0 := vmStatus(t, "VmPin")
	reg, err := pd.RegMR(mem[100:], rw) // starts inside the first page
	if err != nil {
		t.Fatal(err)
	}
	if m := reg.(*mr); len(m.pin.slots) != 6 || m.pin.locked {
		t.Fatalf("83 pages in slots of 16: %d slots (locked %v), want 6", len(m.pin.slots), m.pin.locked)
	}
	if got := vmStatus(t, "VmPin") - pin0; got != 83*pageSize/1024 {
		t.Errorf("VmPin grew by %d KiB, want %d", got, 83*pageSize/1024)
	}
	if err := unix.Madvise(mem, unix.MADV_DONTNEED); err != nil {
		t.Errorf("madvise: %v", err)
	}
	if err := reg.Dereg(); err != nil {
		t.Fatal(err)
	}
	if got := c.freeSlots(); got != free0 {
		t.Errorf("%d free slots after Dereg, %d before", got, free0)
	}
	if got := vmStatus(t, "VmPin"); got != pin0 {
		t.Errorf("VmPin %d KiB after Dereg, %d before", got, pin0)
	}

	// A table of 4 slots: a region needing 6 is refused, one needing 4 fits.
	small, err := newUringPinner(4)
	if err != nil {
		t.Fatal(err)
	}
	small.slotMax = 16 * pageSize
	defer small.close()
	c.life.Lock()
	c.uring = small
	c.life.Unlock()
	if _, err := pd.RegMR(mem, rw); !errors.Is(err, verbs.ErrNoResources) {
		t.Fatalf("a region needing 6 slots of 4: %v, want ErrNoResources", err)
	}
	if got := c.freeSlots(); got != 4 {
		t.Fatalf("%d free slots after the refusal, want 4", got)
	}
	if got := vmStatus(t, "VmPin"); got != pin0 {
		t.Errorf("VmPin %d KiB after the refusal, %d before", got, pin0)
	}
	reg, err = pd.RegMR(mem[:64*pageSize], rw)
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.Dereg(); err != nil {
		t.Fatal(err)
	}
}

// TestPinConcurrent: registrations and deregistrations from many goroutines, some
// overlapping the same pages, leave the table and the pinned total as they found
// them, and closing a context with regions still registered unpins them.
func TestPinConcurrent(t *testing.T) {
	c, pd := openForPin(t)
	if c.PinMethod() != PinIOUring {
		t.Skipf("pinning with %s", c.PinMethod())
	}
	free0 := c.freeSlots()
	pin0 := vmStatus(t, "VmPin")
	shared := anonPages(t, 64)
	const workers, rounds = 8, 200
	errs := make(chan error, workers)
	for w := range workers {
		go func() {
			own := make([]byte, (w+1)*pageSize)
			for i := range rounds {
				b := own
				if i%2 == 1 {
					b = shared[(w*i)%32*pageSize:][:16*pageSize]
				}
				m, err := pd.RegMR(b, rw)
				if err != nil {
					errs <- err
					return
				}
				if err := m.Dereg(); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range workers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if got := c.freeSlots(); got != free0 {
		t.Errorf("%d free slots, %d before", got, free0)
	}
	if got := vmStatus(t, "VmPin"); got != pin0 {
		t.Errorf("VmPin %d KiB, %d before", got, pin0)
	}

	// Close with regions registered.
	for range 4 {
		if _, err := pd.RegMR(anonPages(t, 8), rw); err != nil {
			t.Fatal(err)
		}
	}
	if got := vmStatus(t, "VmPin") - pin0; got != 4*8*pageSize/1024 {
		t.Errorf("VmPin grew by %d KiB for 4 regions of 8 pages", got)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if got := vmStatus(t, "VmPin"); got != pin0 {
		t.Errorf("VmPin %d KiB after Close, %d before", got, pin0)
	}
}

// TestStaleRegionMovesVirtualData pins down what the provider does with a region
// whose pages were dropped by madvise(DONTNEED): it moves data by virtual address
// (process_vm_writev and plain copies), so a peer's RDMA WRITE lands in the frames
// mapped now and the application sees it, while the registration still pins the
// old frames. An HCA would write the old frames and the application would not see
// the data: the soft provider does not reproduce that corruption, so tests of
// registration caches must detect stale entries by the page-frame snapshot.
func TestStaleRegionMovesVirtualData(t *testing.T) {
	a, b := pairForPin(t)
	if b.ctx.PinMethod() != PinIOUring {
		t.Skipf("pinning with %s: madvise fails on registered memory", b.ctx.PinMethod())
	}
	target := anonPages(t, 4)
	tm, err := b.pd.RegMR(target, rw)
	if err != nil {
		t.Fatal(err)
	}
	defer tm.Dereg()
	old := tm.(*mr).xlate
	if err := unix.Madvise(target, unix.MADV_DONTNEED); err != nil {
		t.Fatal(err)
	}
	src := make([]byte, 4*pageSize)
	pattern(src, 9)
	lm := regLocal(t, a, src, rw)
	if wc := post(t, a, verbs.SendWR{Opcode: verbs.OpRDMAWrite, SG: sge(lm, len(src)), RemoteAddr: tm.Addr(), RKey: tm.RKey()}); wc.Status != verbs.StatusSuccess {
		t.Fatalf("write into a stale region: %v", wc.Status)
	}
	if !bytes.Equal(target, src) {
		t.Fatal("the write into a stale region is not visible at its virtual address")
	}
	if old != nil && old[0]&pfnMask != 0 {
		now := framesOf(t, target)
		for i := range now {
			if now[i] == old[i]&pfnMask {
				t.Fatalf("page %d: the write landed in the pinned frame %#x", i, now[i])
			}
		}
	}
}
