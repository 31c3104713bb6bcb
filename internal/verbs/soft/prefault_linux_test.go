package soft

import (
	"os"
	"runtime"
	"sync/atomic"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestConnectedRingsFaultNoMore: once a queue pair is connected, both its rings
// (the one it writes and the peer's it reads) are mapped in, ours for writing: the first messages
// that reach each page of a ring take no page fault on their way (a minor fault
// costs microseconds, and a fresh connection otherwise takes one per page per
// side, 128 in all, within its first few thousand messages).
func TestConnectedRingsFaultNoMore(t *testing.T) {
	p := msgPair(t, 64)
	q := p.B.QP.(*qp)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var before, after unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &before); err != nil {
		t.Skip(err)
	}
	page := os.Getpagesize()
	var sink uint64
	for _, b := range [][]byte{q.in.slots, q.out.slots} {
		for off := 0; off < len(b); off += page {
			sink += atomic.LoadUint64((*uint64)(unsafe.Pointer(&b[off])))
		}
	}
	// Our own ring is written too (the pages start with sequence words, all 0
	// while nothing was sent: writing 0 leaves them so).
	for off := 0; off < len(q.out.slots); off += page {
		atomic.StoreUint64((*uint64)(unsafe.Pointer(&q.out.slots[off])), 0)
	}
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &after); err != nil {
		t.Fatal(err)
	}
	pages := 2 * len(q.in.slots) / page
	if faults := after.Minflt - before.Minflt; faults > int64(pages/16) {
		t.Fatalf("reading the %d pages of a connected queue pair's rings took %d page faults (sink %d)", pages, faults, sink)
	}
}
