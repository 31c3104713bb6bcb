package rma_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"testing"

	"github.com/goportals/goportals/portals"
	"github.com/goportals/goportals/rma"
)

func init() {
	scenarios["transfers"] = transfers
	scenarios["atomics"] = atomics
	scenarios["failures"] = failures
	scenarios["windows"] = windows
}

func TestTransfers2(t *testing.T) { launch(t, "transfers", 2) }
func TestTransfers4(t *testing.T) { launch(t, "transfers", 4) }
func TestAtomics2(t *testing.T)   { launch(t, "atomics", 2) }
func TestAtomics4(t *testing.T)   { launch(t, "atomics", 4) }
func TestFailures2(t *testing.T)  { launch(t, "failures", 2) }
func TestWindows2(t *testing.T)   { launch(t, "windows", 2) }

// pattern returns n bytes that depend on who wrote them, where and in which round,
// so a byte in the wrong place or from the wrong writer shows.
func pattern(writer, round, off, n int) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = byte(writer*131 + round*71 + (off+i)*7 + (off+i)>>8)
	}
	return p
}

// windowLen is rank r's window length in the transfers scenario: the ranks expose
// different lengths, so each bound is a rank's own.
func windowLen(r int) int { return 3<<20 + r*4096 + 5 }

// Region layout of the transfers scenario in every window: [0, 8) an eager write,
// [64, 64+1 MiB) a long write, [1 MiB+4096, ...) one Put piece per writer rank.
const (
	smallOff = 0
	bigOff   = 64
	bigLen   = 1 << 20
	putsOff  = bigOff + bigLen + 4096
	putLen   = 4099 // odd: not a multiple of any word
)

// transfers: every rank writes an 8-byte (eager) and a 1 MiB (long) block into its
// right neighbour's window with WriteAt, starts one Put into every rank's window
// (itself included) and flushes; after a barrier every rank checks its own memory
// byte for byte, then reads its left neighbour's memory back with ReadAt and
// checks it too.
func transfers(ctx context.Context) error {
	// A window of no memory tells this rank its rank, to size the real one.
	probe, err := rma.Open(ctx, nil)
	if err != nil {
		return err
	}
	me, n := probe.Rank(), probe.Size()
	if probe.Len(me) != 0 {
		return fmt.Errorf("an empty window has length %d", probe.Len(me))
	}
	if err := probe.WriteAt(ctx, me, []byte{1}, 0); !errors.Is(err, rma.ErrOutOfRange) {
		return fmt.Errorf("writing into an empty window: %v, want ErrOutOfRange", err)
	}
	mem := make([]byte, windowLen(me))
	w, err := rma.Open(ctx, mem)
	if err != nil {
		return err
	}
	defer w.Close(ctx)
	if err := probe.Close(ctx); err != nil {
		return err
	}
	for r := 0; r < n; r++ {
		if w.Len(r) != windowLen(r) {
			return fmt.Errorf("Len(%d) = %d, want %d", r, w.Len(r), windowLen(r))
		}
	}
	right, left := (me+1)%n, (me+n-1)%n
	if err := w.WriteAt(ctx, right, pattern(me, 0, smallOff, 8), smallOff); err != nil {
		return err
	}
	big := pattern(me, 0, bigOff, bigLen)
	if err := w.WriteAt(ctx, right, big, bigOff); err != nil {
		return err
	}
	pieces := make([][]byte, n)
	for r := 0; r < n; r++ {
		pieces[r] = pattern(me, 1, putsOff+me*putLen, putLen)
		if err := w.Put(r, pieces[r], int64(putsOff+me*putLen)); err != nil {
			return err
		}
	}
	if err := w.Flush(ctx); err != nil {
		return err
	}
	if err := w.Barrier(ctx); err != nil {
		return err
	}
	check := func(what string, got []byte, writer, round, off int) error {
		if want := pattern(writer, round, off, len(got)); !bytes.Equal(got, want) {
			i := 0
			for got[i] == want[i] {
				i++
			}
			return fmt.Errorf("%s: byte %d is %#x, want %#x (from rank %d)", what, i, got[i], want[i], writer)
		}
		return nil
	}
	if err := check("8-byte WriteAt", mem[smallOff:smallOff+8], left, 0, smallOff); err != nil {
		return err
	}
	if err := check("1 MiB WriteAt", mem[bigOff:bigOff+bigLen], left, 0, bigOff); err != nil {
		return err
	}
	for r := 0; r < n; r++ {
		off := putsOff + r*putLen
		if err := check(fmt.Sprintf("Put from rank %d", r), mem[off:off+putLen], r, 1, off); err != nil {
			return err
		}
	}
	if tail := mem[putsOff+n*putLen:]; !bytes.Equal(tail, make([]byte, len(tail))) {
		return fmt.Errorf("bytes past the last Put were written")
	}
	// ReadAt: the left neighbour's memory holds what its own left neighbour wrote.
	got := make([]byte, bigLen)
	if err := w.ReadAt(ctx, left, got, bigOff); err != nil {
		return err
	}
	if err := check("1 MiB ReadAt", got, (left+n-1)%n, 0, bigOff); err != nil {
		return err
	}
	small := make([]byte, 8)
	if err := w.ReadAt(ctx, left, small, smallOff); err != nil {
		return err
	}
	if err := check("8-byte ReadAt", small, (left+n-1)%n, 0, smallOff); err != nil {
		return err
	}
	// The last byte of the left neighbour's window is readable; one more is not.
	last := windowLen(left) - 1
	if err := w.ReadAt(ctx, left, small[:1], int64(last)); err != nil {
		return fmt.Errorf("reading the last byte: %v", err)
	}
	if err := w.ReadAt(ctx, left, small[:2], int64(last)); !errors.Is(err, rma.ErrOutOfRange) {
		return fmt.Errorf("reading past the end: %v, want ErrOutOfRange", err)
	}
	if a, err := w.Arrivals(); err != nil || a < uint64(2+n) {
		return fmt.Errorf("Arrivals = %d, %v; want at least %d", a, err, 2+n)
	}
	if err := w.Barrier(ctx); err != nil { // the peers are done reading this memory
		return err
	}
	return w.Close(ctx)
}

// atomics: every rank fetch-adds 1 many times to rank 0's counter and marks each
// fetched value in a table in rank 0's memory: at the end the counter holds the
// total and every value from 0 to total-1 was fetched exactly once. Then every
// rank tries one compare-and-swap of the same word: exactly one wins. Smaller
// integer types and Swap are checked on each rank's own words.
func atomics(ctx context.Context) error {
	const perRank = 200
	const counterOff, lockOff, winnersOff, tableOff = 0, 8, 16, 64
	mem := make([]byte, tableOff+8*perRank)
	w, err := rma.Open(ctx, mem)
	if err != nil {
		return err
	}
	defer w.Close(ctx)
	me, n := w.Rank(), w.Size()
	total := n * perRank
	if w.Len(0) < tableOff+total {
		return fmt.Errorf("rank 0's window is too small for %d ranks", n)
	}
	for i := 0; i < perRank; i++ {
		old, err := rma.FetchAdd(ctx, w, 0, counterOff, uint64(1))
		if err != nil {
			return err
		}
		if old >= uint64(total) {
			return fmt.Errorf("fetched %d, more than the %d adds", old, total)
		}
		if err := w.Put(0, []byte{byte(me + 1)}, int64(tableOff+old)); err != nil {
			return err
		}
	}
	// Compare-and-swap 0 -> me+1: exactly one rank sees 0 come back.
	prev, err := rma.CompareAndSwap(ctx, w, 0, lockOff, uint64(0), uint64(me+1))
	if err != nil {
		return err
	}
	if prev == 0 {
		if _, err := rma.FetchAdd(ctx, w, 0, winnersOff, uint32(1)); err != nil {
			return err
		}
	} else if prev < 1 || prev > uint64(n) {
		return fmt.Errorf("compare-and-swap returned %d, not a rank's mark", prev)
	}
	if err := w.Barrier(ctx); err != nil {
		return err
	}
	if me == 0 {
		var counter uint64
		for i := 7; i >= 0; i-- {
			counter = counter<<8 | uint64(mem[counterOff+i])
		}
		if counter != uint64(total) {
			return fmt.Errorf("counter %d after %d adds", counter, total)
		}
		seen := map[byte]int{}
		for i, b := range mem[tableOff : tableOff+total] {
			if b == 0 {
				return fmt.Errorf("value %d was never fetched", i)
			}
			seen[b]++
		}
		for r := 0; r < n; r++ {
			if seen[byte(r+1)] != perRank {
				return fmt.Errorf("rank %d fetched %d values, want %d", r, seen[byte(r+1)], perRank)
			}
		}
		winner := int(mem[lockOff])
		if winner < 1 || winner > n || mem[winnersOff] != 1 {
			return fmt.Errorf("compare-and-swap: lock word %d, %d winners; want one winner", winner, mem[winnersOff])
		}
	}
	if err := w.Barrier(ctx); err != nil {
		return err
	}
	// Typed atomics on the right neighbour's table words, which rank 0 no longer
	// needs: int8 wraps, int16 negative, Swap returns the old value.
	right := (me + 1) % n
	if _, err := rma.Swap(ctx, w, right, tableOff, int64(-3)); err != nil {
		return err
	}
	if old, err := rma.Swap(ctx, w, right, tableOff, int64(40)); err != nil || old != -3 {
		return fmt.Errorf("Swap returned %d, %v; want -3", old, err)
	}
	if old, err := rma.FetchAdd(ctx, w, right, tableOff, int64(2)); err != nil || old != 40 {
		return fmt.Errorf("FetchAdd int64 returned %d, %v; want 40", old, err)
	}
	if _, err := rma.Swap(ctx, w, right, tableOff+8, int8(127)); err != nil {
		return err
	}
	if old, err := rma.FetchAdd(ctx, w, right, tableOff+8, int8(1)); err != nil || old != 127 {
		return fmt.Errorf("FetchAdd int8 returned %d, %v; want 127", old, err)
	}
	if old, err := rma.FetchAdd(ctx, w, right, tableOff+8, int8(0)); err != nil || old != -128 {
		return fmt.Errorf("int8 127+1 gave %d, %v; want -128 (wrapped)", old, err)
	}
	if _, err := rma.Swap(ctx, w, right, tableOff+10, int16(-1000)); err != nil {
		return err
	}
	if prev, err := rma.CompareAndSwap(ctx, w, right, tableOff+10, int16(5), 6); err != nil || prev != -1000 {
		return fmt.Errorf("CompareAndSwap int16 with a stale value returned %d, %v; want -1000", prev, err)
	}
	if prev, err := rma.CompareAndSwap(ctx, w, right, tableOff+10, int16(-1000), 6); err != nil || prev != -1000 {
		return fmt.Errorf("CompareAndSwap int16 returned %d, %v; want -1000", prev, err)
	}
	if v, err := rma.FetchAdd(ctx, w, right, tableOff+10, int16(0)); err != nil || v != 6 {
		return fmt.Errorf("after CompareAndSwap the int16 is %d, %v; want 6", v, err)
	}
	type counter uint32 // a defined type takes its underlying type's datatype
	if _, err := rma.Swap(ctx, w, right, tableOff+12, counter(1<<31)); err != nil {
		return err
	}
	if _, err := rma.FetchAdd(ctx, w, right, tableOff+12, counter(7)); err != nil {
		return err
	}
	if err := w.Barrier(ctx); err != nil {
		return err
	}
	if got := mem[tableOff+12 : tableOff+16]; !bytes.Equal(got, []byte{7, 0, 0, 0x80}) {
		return fmt.Errorf("counter(1<<31)+7 landed as % x", got)
	}
	return w.Close(ctx)
}

// failures: bad arguments come back as typed errors before anything is sent, and
// nothing panics.
func failures(ctx context.Context) error {
	mem := make([]byte, 1024)
	w, err := rma.Open(ctx, mem)
	if err != nil {
		return err
	}
	n := w.Size()
	buf := make([]byte, 16)
	cases := []struct {
		what string
		err  error
		want error
	}{
		{"WriteAt to rank Size()", w.WriteAt(ctx, n, buf, 0), rma.ErrBadRank},
		{"ReadAt from rank -1", w.ReadAt(ctx, -1, buf, 0), rma.ErrBadRank},
		{"Put to rank Size()+5", w.Put(n+5, buf, 0), rma.ErrBadRank},
		{"WriteAt at a negative offset", w.WriteAt(ctx, 0, buf, -1), rma.ErrOutOfRange},
		{"WriteAt across the end", w.WriteAt(ctx, 1, buf, 1024-15), rma.ErrOutOfRange},
		{"ReadAt past the end", w.ReadAt(ctx, 1, buf, 1<<40), rma.ErrOutOfRange},
		{"Put across the end", w.Put(1, buf, 1020), rma.ErrOutOfRange},
	}
	_, err = rma.FetchAdd(ctx, w, 1, 4, uint64(1))
	cases = append(cases, struct {
		what string
		err  error
		want error
	}{"FetchAdd at a misaligned offset", err, rma.ErrMisaligned})
	_, err = rma.CompareAndSwap(ctx, w, 1, 1020, uint64(0), 1)
	cases = append(cases, struct {
		what string
		err  error
		want error
	}{"CompareAndSwap across the end", err, rma.ErrOutOfRange})
	for _, c := range cases {
		var e *rma.Error
		if !errors.Is(c.err, c.want) || !errors.Is(c.err, portals.ArgInvalid) || !errors.As(c.err, &e) {
			return fmt.Errorf("%s: %v, want an *rma.Error matching %v and PTL_ARG_INVALID", c.what, c.err, c.want)
		}
	}
	// A context that already ended stops a blocking call before it starts.
	done, cancel := context.WithCancel(ctx)
	cancel()
	if err := w.WriteAt(done, 1, buf, 0); !errors.Is(err, context.Canceled) {
		return fmt.Errorf("WriteAt with an ended context: %v", err)
	}
	// Zero-length calls are checked, then do nothing.
	if err := w.WriteAt(ctx, 1, nil, 1024); err != nil {
		return fmt.Errorf("empty WriteAt at the end: %v", err)
	}
	if err := w.Close(ctx); err != nil {
		return err
	}
	if err := w.WriteAt(ctx, 1, buf, 0); !errors.Is(err, rma.ErrClosed) {
		return fmt.Errorf("WriteAt after Close: %v", err)
	}
	if err := w.Close(ctx); !errors.Is(err, rma.ErrClosed) {
		return fmt.Errorf("second Close: %v", err)
	}
	if _, err := rma.Swap(ctx, w, 0, 0, uint8(1)); !errors.Is(err, rma.ErrClosed) {
		return fmt.Errorf("Swap after Close: %v", err)
	}
	return nil
}

// windows: two windows at once are independent, and a job can close its last
// window and open a new one.
func windows(ctx context.Context) error {
	a, b := make([]byte, 64), make([]byte, 64)
	wa, err := rma.Open(ctx, a)
	if err != nil {
		return err
	}
	wb, err := rma.Open(ctx, b)
	if err != nil {
		return err
	}
	me, n := wa.Rank(), wa.Size()
	right := (me + 1) % n
	if err := wa.WriteAt(ctx, right, []byte("window A"), 0); err != nil {
		return err
	}
	if err := wb.WriteAt(ctx, right, []byte("window B"), 8); err != nil {
		return err
	}
	if err := wa.Barrier(ctx); err != nil {
		return err
	}
	if err := wb.Barrier(ctx); err != nil {
		return err
	}
	if string(a[:8]) != "window A" || string(b[8:16]) != "window B" || a[8] != 0 || b[0] != 0 {
		return fmt.Errorf("windows mixed up: A %q, B %q", a[:16], b[:16])
	}
	if err := wa.Close(ctx); err != nil {
		return err
	}
	if err := wb.Close(ctx); err != nil {
		return err
	}
	c := make([]byte, 8)
	wc, err := rma.Open(ctx, c)
	if err != nil {
		return fmt.Errorf("reopening: %w", err)
	}
	if _, err := rma.FetchAdd(ctx, wc, right, 0, uint64(me+1)); err != nil {
		return err
	}
	if err := wc.Barrier(ctx); err != nil {
		return err
	}
	if c[0] != byte((me+n-1)%n+1) {
		return fmt.Errorf("reopened window holds %d, want %d", c[0], (me+n-1)%n+1)
	}
	return wc.Close(ctx)
}

func init() { scenarios["peerlost"] = peerLost }

func TestPeerLost2(t *testing.T) { launch(t, "peerlost", 2) }

// peerLost: rank 1 exits right after Open, without closing; rank 0's calls then
// fail with a *RemoteError (the peer is unreachable) instead of hanging.
func peerLost(ctx context.Context) error {
	mem := make([]byte, 64)
	w, err := rma.Open(ctx, mem)
	if err != nil {
		return err
	}
	if w.Rank() != 0 {
		return nil // leave at once: the process ends with its window open
	}
	// Until rank 1's exit is noticed, writes still land.
	for {
		err = w.WriteAt(ctx, 1, []byte("anyone?"), 0)
		if err != nil {
			break
		}
	}
	var re *rma.RemoteError
	if !errors.Is(err, rma.ErrRemote) || !errors.As(err, &re) || !errors.Is(err, portals.Fail) {
		return fmt.Errorf("WriteAt to a rank that exited: %v, want a *RemoteError", err)
	}
	if _, err := rma.FetchAdd(ctx, w, 1, 0, uint64(1)); !errors.Is(err, rma.ErrRemote) {
		return fmt.Errorf("FetchAdd on a rank that exited: %v, want ErrRemote", err)
	}
	if err := w.Put(1, []byte("hello"), 8); err != nil {
		return fmt.Errorf("Put to a rank that exited: %v (its failure is Flush's to report)", err)
	}
	err = w.Flush(ctx)
	if !errors.As(err, &re) || re.Count != 1 {
		return fmt.Errorf("Flush after a put to a rank that exited: %v, want a *RemoteError counting 1", err)
	}
	fmt.Println("rank 0 saw the lost peer:", err)
	// The job is broken: leave without the collective Close.
	return nil
}

func init() { scenarios["collectives"] = collectives }

func TestCollectives4(t *testing.T) { launch(t, "collectives", 4) }

// collectives: back-to-back collectives (Open exchanges the window lengths, Close
// and Barrier synchronize) in which each rank sees every rank's length of that
// very round, never one of an earlier or later round; ranks that run ahead must
// not disturb ranks still at an earlier one.
func collectives(ctx context.Context) error {
	base, err := rma.Open(ctx, nil) // keeps the job joined between rounds
	if err != nil {
		return err
	}
	me := base.Rank()
	for round := range 60 {
		w, err := rma.Open(ctx, make([]byte, 8*(me+1)+round))
		if err != nil {
			return err
		}
		for r := 0; r < w.Size(); r++ {
			if got, want := w.Len(r), 8*(r+1)+round; got != want {
				return fmt.Errorf("round %d: Len(%d) = %d, want %d", round, r, got, want)
			}
		}
		if round%3 == 0 {
			if err := w.Barrier(ctx); err != nil {
				return err
			}
		}
		if err := w.Close(ctx); err != nil {
			return err
		}
	}
	return base.Close(ctx)
}
