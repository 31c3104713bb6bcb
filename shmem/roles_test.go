package shmem

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"syscall"
	"time"
)

// roles are what the PEs of a multi-PE test do; each returns nil when every
// check passed on this PE.
var roles = map[string]func(ctx context.Context, w *World) error{
	"putget":    rolePutGet,
	"nbi":       roleNBI,
	"strided":   roleStrided,
	"putsignal": rolePutSignal,
	"fence":     roleFence,
	"global":    roleGlobal,
	"deadpe":    roleDeadPE,
	"amo":       roleAMO,
	"fadd":      roleFetchAdd,
	"waituntil": roleWaitUntil,
	"barrier":   roleBarrier,
	"broadcast": roleBroadcast,
	"collect":   roleCollect,
	"alltoall":  roleAlltoall,
	"reduce":    roleReduce,
	"lock":      roleLock,
	"ctx":       roleCtx,
	"alloc":     roleAlloc,
	"errors":    roleErrors,
}

// pattern is the value PE pe writes at index i.
func pattern(pe, i int) uint32 { return uint32(pe)*2654435761 ^ uint32(i)*40503 + 1 }

// rolePutGet: every PE puts to its right neighbour, from Go memory and from the
// heap, in sizes around the volatile and eager limits and a long one, then
// reads back from its left neighbour with Get, P/G at the ends.
func rolePutGet(ctx context.Context, w *World) error {
	me, n := w.MyPE(), w.NPEs()
	right, left := (me+1)%n, (me+n-1)%n
	c := w.Ctx()
	for _, size := range []int{1, 2, 233, 234, 1000, 4096, 1 << 18} {
		dst, err := Calloc[uint32](ctx, w, size)
		if err != nil {
			return err
		}
		heapSrc, err := Malloc[uint32](ctx, w, size)
		if err != nil {
			return err
		}
		src := make([]uint32, size)
		for i := range src {
			src[i] = pattern(me, i)
		}
		copy(heapSrc.Local(), src)
		// First half from Go memory, second half from the heap.
		h := size / 2
		if err := Put(ctx, c, dst, src[:h], right); err != nil {
			return err
		}
		if err := Put(ctx, c, dst.Slice(h, size), heapSrc.Local()[h:], right); err != nil {
			return err
		}
		if err := w.BarrierAll(ctx); err != nil {
			return err
		}
		for i, v := range dst.Local() {
			if v != pattern(left, i) {
				return fmt.Errorf("size %d: dst[%d] = %#x, want %#x", size, i, v, pattern(left, i))
			}
		}
		// Get the right neighbour's dst (which holds my data) into Go memory
		// and into the heap.
		got := make([]uint32, size)
		if err := Get(ctx, c, got, dst, right); err != nil {
			return err
		}
		if !slices.Equal(got, src) {
			return fmt.Errorf("size %d: Get from PE %d differs", size, right)
		}
		clear(heapSrc.Local())
		if err := Get(ctx, c, heapSrc.Local(), dst, right); err != nil {
			return err
		}
		if !slices.Equal(heapSrc.Local(), src) {
			return fmt.Errorf("size %d: Get into the heap differs", size)
		}
		v, err := G(ctx, c, dst.At(size-1), right)
		if err != nil {
			return err
		}
		if v != src[size-1] {
			return fmt.Errorf("G = %#x, want %#x", v, src[size-1])
		}
		if err := w.BarrierAll(ctx); err != nil {
			return err
		}
		if err := P(ctx, c, dst.At(0), uint32(me+7), right); err != nil {
			return err
		}
		if err := w.BarrierAll(ctx); err != nil {
			return err
		}
		if got := dst.Local()[0]; got != uint32(left+7) {
			return fmt.Errorf("P: %d, want %d", got, left+7)
		}
		if err := Free(ctx, heapSrc); err != nil {
			return err
		}
		if err := Free(ctx, dst); err != nil {
			return err
		}
	}
	// Float and complex elements go through unchanged.
	f, err := Calloc[complex128](ctx, w, 3)
	if err != nil {
		return err
	}
	if err := Put(ctx, c, f, []complex128{complex(float64(me), 1.5), complex(math.Pi, -2), 0}, right); err != nil {
		return err
	}
	if err := w.BarrierAll(ctx); err != nil {
		return err
	}
	if got := f.Local(); got[0] != complex(float64(left), 1.5) || got[1] != complex(math.Pi, -2) {
		return fmt.Errorf("complex128 put: %v", got)
	}
	return Free(ctx, f)
}

// roleNBI: every PE puts a distinct block into every PE (itself included) with
// PutNBI from Go memory, then gets every block back with GetNBI; nothing is
// checked until Quiet.
func roleNBI(ctx context.Context, w *World) error {
	me, n := w.MyPE(), w.NPEs()
	const block = 3000 // above the eager limit: the data must stay until Quiet
	dst, err := Calloc[int64](ctx, w, block*n)
	if err != nil {
		return err
	}
	srcs := make([][]int64, n)
	for pe := 0; pe < n; pe++ {
		srcs[pe] = make([]int64, block)
		for i := range srcs[pe] {
			srcs[pe][i] = int64(me*1_000_000 + pe*10_000 + i)
		}
		if err := PutNBI(ctx, w.Ctx(), dst.Slice(me*block, (me+1)*block), srcs[pe], pe); err != nil {
			return err
		}
	}
	if err := w.Quiet(ctx); err != nil {
		return err
	}
	if err := w.BarrierAll(ctx); err != nil {
		return err
	}
	local := dst.Local()
	for from := 0; from < n; from++ {
		for i := 0; i < block; i++ {
			if want := int64(from*1_000_000 + me*10_000 + i); local[from*block+i] != want {
				return fmt.Errorf("block from %d [%d] = %d, want %d", from, i, local[from*block+i], want)
			}
		}
	}
	got := make([][]int64, n)
	for pe := 0; pe < n; pe++ {
		got[pe] = make([]int64, block*n)
		if err := GetNBI(ctx, w.Ctx(), got[pe], dst, pe); err != nil {
			return err
		}
	}
	if err := w.Quiet(ctx); err != nil {
		return err
	}
	for pe := 0; pe < n; pe++ {
		for from := 0; from < n; from++ {
			if want := int64(from*1_000_000 + pe*10_000 + 5); got[pe][from*block+5] != want {
				return fmt.Errorf("GetNBI from %d: block %d = %d, want %d", pe, from, got[pe][from*block+5], want)
			}
		}
	}
	if err := w.BarrierAll(ctx); err != nil {
		return err
	}
	return Free(ctx, dst)
}

// roleStrided: IPut every third element into every second slot of the right
// neighbour; IGet them back with the strides swapped.
func roleStrided(ctx context.Context, w *World) error {
	me, n := w.MyPE(), w.NPEs()
	right, left := (me+1)%n, (me+n-1)%n
	const cnt = 50
	dst, err := Calloc[int32](ctx, w, 2*cnt)
	if err != nil {
		return err
	}
	src := make([]int32, 3*cnt)
	for i := range src {
		src[i] = int32(me*1000 + i)
	}
	if err := IPut(ctx, w.Ctx(), dst, src, 2, 3, cnt, right); err != nil {
		return err
	}
	if err := w.BarrierAll(ctx); err != nil {
		return err
	}
	for i, v := range dst.Local() {
		want := int32(0)
		if i%2 == 0 {
			want = int32(left*1000 + 3*(i/2))
		}
		if v != want {
			return fmt.Errorf("IPut: dst[%d] = %d, want %d", i, v, want)
		}
	}
	got := make([]int32, 4*cnt)
	if err := IGet(ctx, w.Ctx(), got, dst, 4, 2, cnt, right); err != nil {
		return err
	}
	for i := 0; i < cnt; i++ {
		if want := int32(me*1000 + 3*i); got[4*i] != want {
			return fmt.Errorf("IGet: got[%d] = %d, want %d", 4*i, got[4*i], want)
		}
	}
	if err := w.BarrierAll(ctx); err != nil {
		return err
	}
	return Free(ctx, dst)
}

// rolePutSignal: each PE sends a long block with a signal to its right
// neighbour and waits for its left neighbour's; the data must be there when
// the signal is. Rounds alternate SignalSet and SignalAdd (onto a word that
// starts at 1, so an add is told from a set).
func rolePutSignal(ctx context.Context, w *World) error {
	me, n := w.MyPE(), w.NPEs()
	right, left := (me+1)%n, (me+n-1)%n
	const size = 20000
	data, err := Calloc[uint64](ctx, w, size)
	if err != nil {
		return err
	}
	sig, err := Calloc[uint64](ctx, w, 1)
	if err != nil {
		return err
	}
	src := make([]uint64, size)
	for round := 1; round <= 6; round++ {
		sig.Local()[0] = 1
		if err := w.BarrierAll(ctx); err != nil {
			return err
		}
		for i := range src {
			src[i] = uint64(me<<32 | round<<20 | i)
		}
		sop, want := SignalSet, uint64(round+100)
		if round%2 == 0 {
			sop, want = SignalAdd, uint64(round+100)+1
		}
		put := PutSignal[uint64]
		if round > 3 {
			put = PutSignalNBI[uint64]
		}
		if err := put(ctx, w.Ctx(), data, src, sig, uint64(round+100), sop, right); err != nil {
			return err
		}
		got, err := SignalWaitUntil(ctx, sig, CmpGE, want)
		if err != nil {
			return err
		}
		if got != want {
			return fmt.Errorf("round %d: signal %d, want %d", round, got, want)
		}
		if f, err := SignalFetch(sig); err != nil || f != want {
			return fmt.Errorf("SignalFetch: %d %v", f, err)
		}
		for _, i := range []int{0, size / 2, size - 1} {
			if got, exp := data.Local()[i], uint64(left<<32|round<<20|i); got != exp {
				return fmt.Errorf("round %d: data[%d] = %#x when the signal arrived, want %#x", round, i, got, exp)
			}
		}
		// BarrierAll completes the NBI form before src changes.
		if err := w.BarrierAll(ctx); err != nil {
			return err
		}
	}
	if err := Free(ctx, sig); err != nil {
		return err
	}
	return Free(ctx, data)
}

// roleFence: a long put, Fence, then a flag put to the same PE: the PE that
// sees the flag sees the data.
func roleFence(ctx context.Context, w *World) error {
	me, n := w.MyPE(), w.NPEs()
	right, left := (me+1)%n, (me+n-1)%n
	const size = 30000
	data, err := Calloc[uint32](ctx, w, size)
	if err != nil {
		return err
	}
	flag, err := Calloc[uint32](ctx, w, 1)
	if err != nil {
		return err
	}
	src := make([]uint32, size)
	for round := uint32(1); round <= 5; round++ {
		for i := range src {
			src[i] = pattern(me, i) + round
		}
		if err := PutNBI(ctx, w.Ctx(), data, src, right); err != nil {
			return err
		}
		if err := w.Fence(ctx); err != nil {
			return err
		}
		if err := P(ctx, w.Ctx(), flag, round, right); err != nil {
			return err
		}
		if err := WaitUntil(ctx, flag, CmpEQ, round); err != nil {
			return err
		}
		for _, i := range []int{0, size / 2, size - 1} {
			if got, want := data.Local()[i], pattern(left, i)+round; got != want {
				return fmt.Errorf("round %d: data[%d] = %#x after the flag, want %#x", round, i, got, want)
			}
		}
		if err := w.BarrierAll(ctx); err != nil {
			return err
		}
	}
	return errors.Join(Free(ctx, flag), Free(ctx, data))
}

// testGlobal is a symmetric global: Init allocates it on every PE.
var testGlobal = NewGlobal[int64](3)

// roleGlobal: a symmetric global starts zeroed, is reachable from other PEs,
// cannot be freed; one declared after Init is refused.
func roleGlobal(ctx context.Context, w *World) error {
	me, n := w.MyPE(), w.NPEs()
	right, left := (me+1)%n, (me+n-1)%n
	g := testGlobal.Sym(w)
	if g.Err() != nil || g.Len() != 3 {
		return fmt.Errorf("global: %v, %d elements", g.Err(), g.Len())
	}
	if g.Local()[2] != 0 {
		return fmt.Errorf("global not zeroed: %v", g.Local())
	}
	// Every PE looked at its zeroed copy before anyone writes.
	if err := w.SyncAll(ctx); err != nil {
		return err
	}
	if err := Put(ctx, w.Ctx(), g, []int64{int64(me), 7, int64(-me)}, right); err != nil {
		return err
	}
	if err := w.BarrierAll(ctx); err != nil {
		return err
	}
	if got := g.Local(); got[0] != int64(left) || got[1] != 7 || got[2] != int64(-left) {
		return fmt.Errorf("global after the put: %v", got)
	}
	if err := Free(ctx, g); !errors.Is(err, ErrInvalidArg) {
		return fmt.Errorf("Free of a global: %v", err)
	}
	late := NewGlobal[int32](1)
	if err := P(ctx, w.Ctx(), late.Sym(w), 1, right); !errors.Is(err, ErrOutOfRange) {
		return fmt.Errorf("global declared after Init: %v", err)
	}
	var zero Global[int32]
	if err := zero.Sym(w).Err(); !errors.Is(err, ErrOutOfRange) {
		return fmt.Errorf("zero Global: %v", err)
	}
	return w.BarrierAll(ctx)
}

// closeMayFail marks roles in which a PE leaves without Close (or closes the
// World itself).
var closeMayFail = map[string]bool{"deadpe": true}

// roleDeadPE: PE 1 leaves without Close; PE 0's operations to it then fail
// with ErrRemote (or a transport error) instead of hanging, and a wait for a
// word it would have written ends with its context.
func roleDeadPE(ctx context.Context, w *World) error {
	buf, err := Calloc[uint64](ctx, w, 4096)
	if err != nil {
		return err
	}
	if w.MyPE() == 1 {
		fmt.Println("deadpe ok")
		os.Stdout.Sync()
		// syscall.Exit, not os.Exit: no deferred work, no finalization, as a
		// crash would leave.
		syscall.Exit(0)
	}
	src := make([]uint64, 4096)
	deadline := time.Now().Add(30 * time.Second)
	for {
		perr := Put(ctx, w.Ctx(), buf, src, 1)
		if perr == nil {
			perr = w.Quiet(ctx)
		}
		if perr != nil {
			if errors.Is(perr, context.DeadlineExceeded) || errors.Is(perr, context.Canceled) {
				return fmt.Errorf("put to a dead PE waited for its context: %w", perr)
			}
			fmt.Println("put to the dead PE:", perr)
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("puts to a dead PE kept succeeding")
		}
		time.Sleep(time.Millisecond)
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := WaitUntil(short, buf, CmpEQ, 1); !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("wait for a dead PE's write: %v", err)
	}
	return nil
}
