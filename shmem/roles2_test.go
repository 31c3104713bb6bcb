package shmem

import (
	"context"
	"errors"
	"fmt"
	"math/cmplx"
	"time"
	"unsafe"
)

// amoSequence runs every atomic on element me of a, which lives at the right
// neighbour, and checks each returned value against Go arithmetic in T.
func amoSequence[T AMOElem](ctx context.Context, w *World) error {
	me, n := w.MyPE(), w.NPEs()
	right, left := (me+1)%n, (me+n-1)%n
	c := w.Ctx()
	a, err := Calloc[T](ctx, w, n)
	if err != nil {
		return err
	}
	x := a.At(me)
	step := func(what string, got, want T) error {
		if got != want {
			return fmt.Errorf("%T %s returned %v, want %v", got, what, got, want)
		}
		return nil
	}
	cur := T(10)
	if err := AtomicSet(ctx, c, x, cur, right); err != nil {
		return err
	}
	check := func(what string) error {
		if err := c.Quiet(ctx); err != nil {
			return err
		}
		v, err := AtomicFetch(ctx, c, x, right)
		if err != nil {
			return err
		}
		return step(what+" then fetch", v, cur)
	}
	var errs []error
	errs = append(errs, check("set"))
	old, err := AtomicSwap(ctx, c, x, 20, right)
	errs = append(errs, err, step("swap", old, cur))
	cur = 20
	old, err = AtomicCompareSwap(ctx, c, x, 5, 30, right)
	errs = append(errs, err, step("failing cswap", old, cur), check("failing cswap"))
	old, err = AtomicCompareSwap(ctx, c, x, 20, 30, right)
	errs = append(errs, err, step("cswap", old, cur))
	cur = 30
	old, err = AtomicFetchAdd(ctx, c, x, 5, right)
	errs = append(errs, err, step("fetch_add", old, cur))
	cur += 5
	errs = append(errs, AtomicAdd(ctx, c, x, 5, right))
	cur += 5
	errs = append(errs, check("add"))
	old, err = AtomicFetchInc(ctx, c, x, right)
	errs = append(errs, err, step("fetch_inc", old, cur))
	cur++
	errs = append(errs, AtomicInc(ctx, c, x, right))
	cur++
	errs = append(errs, check("inc"))
	old, err = AtomicFetchAnd(ctx, c, x, 0b1010, right)
	errs = append(errs, err, step("fetch_and", old, cur))
	cur &= 0b1010
	errs = append(errs, AtomicAnd(ctx, c, x, 0b0110, right))
	cur &= 0b0110
	errs = append(errs, check("and"))
	old, err = AtomicFetchOr(ctx, c, x, 0b1000, right)
	errs = append(errs, err, step("fetch_or", old, cur))
	cur |= 0b1000
	errs = append(errs, AtomicOr(ctx, c, x, 1, right))
	cur |= 1
	errs = append(errs, check("or"))
	old, err = AtomicFetchXor(ctx, c, x, 0xff, right)
	errs = append(errs, err, step("fetch_xor", old, cur))
	cur ^= 0xff
	errs = append(errs, AtomicXor(ctx, c, x, 0xf, right))
	cur ^= 0xf
	errs = append(errs, check("xor"))
	var big T = 300
	old, err = AtomicFetchAdd(ctx, c, x, -big, right) // wraps for unsigned T, as in Go
	errs = append(errs, err, step("fetch_add of a negative", old, cur))
	cur -= big
	// The high bits of a 64-bit word take part.
	if unsafe.Sizeof(cur) == 8 {
		shift := 40
		hi := T(1) << shift
		old, err = AtomicFetchXor(ctx, c, x, hi, right)
		errs = append(errs, err, step("fetch_xor high", old, cur))
		cur ^= hi
	}
	errs = append(errs, check("last"))
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if err := w.BarrierAll(ctx); err != nil {
		return err
	}
	// The left neighbour ran the same sequence on my element left.
	if got := a.Local()[left]; got != cur {
		return fmt.Errorf("%T: local word of PE %d is %v, want %v", got, left, got, cur)
	}
	return Free(ctx, a)
}

func roleAMO(ctx context.Context, w *World) error {
	return errors.Join(amoSequence[int64](ctx, w), amoSequence[uint64](ctx, w),
		amoSequence[int32](ctx, w), amoSequence[uint32](ctx, w), amoSequence[int](ctx, w))
}

// roleFetchAdd: every PE fetch-adds 1 to one counter at PE 0; every value is
// handed out exactly once (the sums of what each PE got add up to 0+...+K*n-1);
// and non-fetching 32-bit adds to PE n-1 sum up.
func roleFetchAdd(ctx context.Context, w *World) error {
	me, n := w.MyPE(), w.NPEs()
	const k = 300
	ctr, err := Calloc[int64](ctx, w, 1)
	if err != nil {
		return err
	}
	ctr32, err := Calloc[uint32](ctx, w, 1)
	if err != nil {
		return err
	}
	sums, err := Calloc[int64](ctx, w, 2)
	if err != nil {
		return err
	}
	prev := int64(-1)
	for i := 0; i < k; i++ {
		v, err := AtomicFetchAdd(ctx, w.Ctx(), ctr, 1, 0)
		if err != nil {
			return err
		}
		if v <= prev {
			return fmt.Errorf("fetch_add went from %d to %d", prev, v)
		}
		prev = v
		sums.Local()[0] += v
		if err := AtomicAdd(ctx, w.Ctx(), ctr32, uint32(me+1), n-1); err != nil {
			return err
		}
	}
	if err := SumReduce(ctx, w, sums.Slice(1, 2), sums.Slice(0, 1), 1); err != nil {
		return err
	}
	total := int64(k * n)
	if got, want := sums.Local()[1], total*(total-1)/2; got != want {
		return fmt.Errorf("sum of fetched values %d, want %d", got, want)
	}
	if err := w.BarrierAll(ctx); err != nil {
		return err
	}
	if me == 0 && ctr.Local()[0] != total {
		return fmt.Errorf("counter %d, want %d", ctr.Local()[0], total)
	}
	if me == n-1 {
		if got, want := ctr32.Local()[0], uint32(k*n*(n+1)/2); got != want {
			return fmt.Errorf("32-bit counter %d, want %d", got, want)
		}
	}
	return errors.Join(Free(ctx, sums), Free(ctx, ctr32), Free(ctx, ctr))
}

// roleWaitUntil: PE 0 tests flags that others have not set yet, then waits for
// them with the Any, Some and All forms; every PE waits for a counter that all
// others increment; comparisons are signed or unsigned as T is; a wait whose
// context ends returns the context's error.
func roleWaitUntil(ctx context.Context, w *World) error {
	me, n := w.MyPE(), w.NPEs()
	flags, err := Calloc[int32](ctx, w, n)
	if err != nil {
		return err
	}
	if me == 0 {
		if ok, err := TestAll(flags.Slice(1, n), CmpNE, 0); err != nil || ok {
			return fmt.Errorf("TestAll before any set: %v %v", ok, err)
		}
		if i, err := TestAny(flags.Slice(1, n), CmpNE, 0); err != nil || i != -1 {
			return fmt.Errorf("TestAny before any set: %d %v", i, err)
		}
		if ok, err := Test(flags.At(1), CmpEQ, 0); err != nil || !ok {
			return fmt.Errorf("Test of an unset flag: %v %v", ok, err)
		}
	}
	if err := w.SyncAll(ctx); err != nil {
		return err
	}
	if me > 0 {
		time.Sleep(time.Duration(me) * 5 * time.Millisecond)
		if err := AtomicSet(ctx, w.Ctx(), flags.At(me), int32(-me), 0); err != nil {
			return err
		}
	} else {
		rest := flags.Slice(1, n)
		i, err := WaitUntilAny(ctx, rest, CmpLT, 0)
		if err != nil || i < 0 || rest.Local()[i] >= 0 {
			return fmt.Errorf("WaitUntilAny: %d %v", i, err)
		}
		some, err := WaitUntilSome(ctx, rest, CmpNE, 0)
		if err != nil || len(some) == 0 {
			return fmt.Errorf("WaitUntilSome: %v %v", some, err)
		}
		if err := WaitUntilAll(ctx, rest, CmpLE, -1); err != nil {
			return err
		}
		for i, v := range rest.Local() {
			if v != int32(-(i + 1)) {
				return fmt.Errorf("flag %d = %d", i+1, v)
			}
		}
		idx, err := TestSome(rest, CmpEQ, -1)
		if err != nil || len(idx) != 1 || idx[0] != 0 {
			return fmt.Errorf("TestSome = %v %v", idx, err)
		}
	}
	// Everyone waits for everyone else's increment.
	cnt, err := Calloc[uint64](ctx, w, 1)
	if err != nil {
		return err
	}
	for i := 1; i < n; i++ {
		if err := AtomicInc(ctx, w.Ctx(), cnt, (me+i)%n); err != nil {
			return err
		}
	}
	if err := WaitUntil(ctx, cnt, CmpGE, uint64(n-1)); err != nil {
		return err
	}
	// Unsigned comparison: 0xfffffffd is greater than 5.
	u, err := Calloc[uint32](ctx, w, 1)
	if err != nil {
		return err
	}
	if err := AtomicSet(ctx, w.Ctx(), u, 0xfffffffd, (me+1)%n); err != nil {
		return err
	}
	if err := WaitUntil(ctx, u, CmpGT, 5); err != nil {
		return err
	}
	// A wait that nothing satisfies ends with its context.
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	err = WaitUntil(short, u, CmpEQ, 7)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("WaitUntil past its deadline: %v", err)
	}
	if err := w.BarrierAll(ctx); err != nil {
		return err
	}
	return errors.Join(Free(ctx, u), Free(ctx, cnt), Free(ctx, flags))
}

// roleBarrier: before barrier k every PE increments a counter at PE 0; after
// it, the counter is exactly (k+1)*n, so no PE passed a barrier early.
func roleBarrier(ctx context.Context, w *World) error {
	n := w.NPEs()
	ctr, err := Calloc[int64](ctx, w, 1)
	if err != nil {
		return err
	}
	for k := 0; k < 40; k++ {
		if err := AtomicInc(ctx, w.Ctx(), ctr, 0); err != nil {
			return err
		}
		if err := w.BarrierAll(ctx); err != nil {
			return err
		}
		v, err := AtomicFetch(ctx, w.Ctx(), ctr, 0)
		if err != nil {
			return err
		}
		if v != int64((k+1)*n) {
			return fmt.Errorf("after barrier %d the counter is %d, want %d", k, v, (k+1)*n)
		}
		if err := w.SyncAll(ctx); err != nil {
			return err
		}
	}
	return Free(ctx, ctr)
}

// roleBroadcast: every PE is root once; small and long broadcasts.
func roleBroadcast(ctx context.Context, w *World) error {
	me, n := w.MyPE(), w.NPEs()
	for _, size := range []int{1, 10, 5000} {
		src, err := Malloc[int64](ctx, w, size)
		if err != nil {
			return err
		}
		dst, err := Calloc[int64](ctx, w, size)
		if err != nil {
			return err
		}
		for i := range src.Local() {
			src.Local()[i] = int64(me*100000 + i)
		}
		for root := 0; root < n; root++ {
			if err := Broadcast(ctx, w, dst, src, size, root); err != nil {
				return err
			}
			for i, v := range dst.Local() {
				if v != int64(root*100000+i) {
					return fmt.Errorf("broadcast from %d: dst[%d] = %d", root, i, v)
				}
			}
		}
		if err := errors.Join(Free(ctx, dst), Free(ctx, src)); err != nil {
			return err
		}
	}
	return nil
}

// roleCollect: FCollect of fixed blocks and Collect of PE p's p+1 elements.
func roleCollect(ctx context.Context, w *World) error {
	me, n := w.MyPE(), w.NPEs()
	const blk = 5
	src, err := Malloc[int32](ctx, w, n+blk)
	if err != nil {
		return err
	}
	for i := range src.Local() {
		src.Local()[i] = int32(me*100 + i)
	}
	dst, err := Calloc[int32](ctx, w, blk*n)
	if err != nil {
		return err
	}
	if err := FCollect(ctx, w, dst, src, blk); err != nil {
		return err
	}
	for i, v := range dst.Local() {
		if want := int32((i/blk)*100 + i%blk); v != want {
			return fmt.Errorf("fcollect: dst[%d] = %d, want %d", i, v, want)
		}
	}
	all, err := Calloc[int32](ctx, w, n*(n+1)/2)
	if err != nil {
		return err
	}
	total, err := Collect(ctx, w, all, src, me+1)
	if err != nil {
		return err
	}
	if total != n*(n+1)/2 {
		return fmt.Errorf("collect gathered %d", total)
	}
	at := 0
	for pe := 0; pe < n; pe++ {
		for i := 0; i <= pe; i++ {
			if v := all.Local()[at]; v != int32(pe*100+i) {
				return fmt.Errorf("collect: [%d] = %d, want %d", at, v, pe*100+i)
			}
			at++
		}
	}
	// Too small a destination fails on every PE alike.
	if _, err := Collect(ctx, w, all.Slice(0, 1), src, me+1); !errors.Is(err, ErrOutOfRange) {
		return fmt.Errorf("collect into too small a destination: %v", err)
	}
	return errors.Join(Free(ctx, all), Free(ctx, dst), Free(ctx, src))
}

// roleAlltoall: block j of PE p's source lands at block p of PE j's destination.
func roleAlltoall(ctx context.Context, w *World) error {
	me, n := w.MyPE(), w.NPEs()
	for _, k := range []int{1, 3, 2000} {
		src, err := Malloc[int64](ctx, w, k*n)
		if err != nil {
			return err
		}
		dst, err := Calloc[int64](ctx, w, k*n)
		if err != nil {
			return err
		}
		for i := range src.Local() {
			src.Local()[i] = int64(me*1_000_000 + i)
		}
		if err := Alltoall(ctx, w, dst, src, k); err != nil {
			return err
		}
		for p := 0; p < n; p++ {
			for i := 0; i < k; i++ {
				if v, want := dst.Local()[p*k+i], int64(p*1_000_000+me*k+i); v != want {
					return fmt.Errorf("alltoall k=%d: dst[%d] = %d, want %d", k, p*k+i, v, want)
				}
			}
		}
		if err := errors.Join(Free(ctx, dst), Free(ctx, src)); err != nil {
			return err
		}
	}
	return nil
}

// roleReduce: every reduction on data whose result is known in closed form.
func roleReduce(ctx context.Context, w *World) error {
	me, n := w.MyPE(), w.NPEs()
	const cnt = 4
	src, err := Malloc[int64](ctx, w, cnt)
	if err != nil {
		return err
	}
	dst, err := Calloc[int64](ctx, w, cnt)
	if err != nil {
		return err
	}
	for i := range src.Local() {
		src.Local()[i] = int64(me + i + 1)
	}
	expect := func(what string, f func(i int) int64) error {
		for i, v := range dst.Local() {
			if want := f(i); v != want {
				return fmt.Errorf("%s: [%d] = %d, want %d", what, i, v, want)
			}
		}
		return nil
	}
	if err := SumReduce(ctx, w, dst, src, cnt); err != nil {
		return err
	}
	if err := expect("sum", func(i int) int64 { return int64(n*(i+1) + n*(n-1)/2) }); err != nil {
		return err
	}
	if err := ProdReduce(ctx, w, dst, src, cnt); err != nil {
		return err
	}
	if err := expect("prod", func(i int) int64 {
		p := int64(1)
		for q := 0; q < n; q++ {
			p *= int64(q + i + 1)
		}
		return p
	}); err != nil {
		return err
	}
	if err := MinReduce(ctx, w, dst, src, cnt); err != nil {
		return err
	}
	if err := expect("min", func(i int) int64 { return int64(i + 1) }); err != nil {
		return err
	}
	if err := MaxReduce(ctx, w, dst, src, cnt); err != nil {
		return err
	}
	if err := expect("max", func(i int) int64 { return int64(n + i) }); err != nil {
		return err
	}
	for i := range src.Local() {
		src.Local()[i] = int64(1<<me | 1<<(8+i))
	}
	if err := OrReduce(ctx, w, dst, src, cnt); err != nil {
		return err
	}
	if err := expect("or", func(i int) int64 { return int64(1<<n-1) | 1<<(8+i) }); err != nil {
		return err
	}
	if err := AndReduce(ctx, w, dst, src, cnt); err != nil {
		return err
	}
	if err := expect("and", func(i int) int64 {
		if n == 1 {
			return int64(1 | 1<<(8+i))
		}
		return 1 << (8 + i)
	}); err != nil {
		return err
	}
	if err := XorReduce(ctx, w, dst, src, cnt); err != nil {
		return err
	}
	if err := expect("xor", func(i int) int64 {
		x := int64(1<<n - 1)
		if n%2 == 1 {
			x |= 1 << (8 + i)
		}
		return x
	}); err != nil {
		return err
	}
	// Floating point and complex sums, and a 16-bit min.
	fs, err := Malloc[float64](ctx, w, 1)
	if err != nil {
		return err
	}
	fd, err := Calloc[float64](ctx, w, 1)
	if err != nil {
		return err
	}
	fs.Local()[0] = 0.5 * float64(me+1)
	if err := SumReduce(ctx, w, fd, fs, 1); err != nil {
		return err
	}
	if got, want := fd.Local()[0], 0.25*float64(n*(n+1)); got != want {
		return fmt.Errorf("float64 sum %v, want %v", got, want)
	}
	cs, err := Malloc[complex64](ctx, w, 1)
	if err != nil {
		return err
	}
	cd, err := Calloc[complex64](ctx, w, 1)
	if err != nil {
		return err
	}
	cs.Local()[0] = complex(0, 1)
	if err := ProdReduce(ctx, w, cd, cs, 1); err != nil {
		return err
	}
	want := complex64(1)
	for q := 0; q < n; q++ {
		want *= complex(0, 1)
	}
	if cmplx.Abs(complex128(cd.Local()[0]-want)) > 1e-6 {
		return fmt.Errorf("complex64 product %v, want %v", cd.Local()[0], want)
	}
	ss, err := Malloc[int16](ctx, w, 1)
	if err != nil {
		return err
	}
	sd, err := Calloc[int16](ctx, w, 1)
	if err != nil {
		return err
	}
	ss.Local()[0] = int16(-100 * me)
	if err := MinReduce(ctx, w, sd, ss, 1); err != nil {
		return err
	}
	if sd.Local()[0] != int16(-100*(n-1)) {
		return fmt.Errorf("int16 min %d", sd.Local()[0])
	}
	return errors.Join(Free(ctx, sd), Free(ctx, ss), Free(ctx, cd), Free(ctx, cs), Free(ctx, fd), Free(ctx, fs),
		Free(ctx, dst), Free(ctx, src))
}

// roleLock: a read-modify-write of a counter at PE 0 under the lock, by every
// PE many times, loses no update; clearing a lock not held is ErrNotHeld.
func roleLock(ctx context.Context, w *World) error {
	me, n := w.MyPE(), w.NPEs()
	const k = 25
	lock, err := Calloc[int64](ctx, w, 1)
	if err != nil {
		return err
	}
	ctr, err := Calloc[int64](ctx, w, 1)
	if err != nil {
		return err
	}
	for i := 0; i < k; i++ {
		if err := w.SetLock(ctx, lock); err != nil {
			return err
		}
		v, err := G(ctx, w.Ctx(), ctr, 0)
		if err != nil {
			return err
		}
		if err := P(ctx, w.Ctx(), ctr, v+1, 0); err != nil {
			return err
		}
		if err := w.ClearLock(ctx, lock); err != nil {
			return err
		}
	}
	if err := w.BarrierAll(ctx); err != nil {
		return err
	}
	if me == 0 && ctr.Local()[0] != int64(k*n) {
		return fmt.Errorf("counter %d under the lock, want %d", ctr.Local()[0], k*n)
	}
	if err := w.ClearLock(ctx, lock); !errors.Is(err, ErrNotHeld) {
		return fmt.Errorf("ClearLock of a free lock: %v", err)
	}
	if err := w.BarrierAll(ctx); err != nil {
		return err
	}
	// TestLock: exactly one PE gets it.
	got, err := w.TestLock(ctx, lock)
	if err != nil {
		return err
	}
	winners, err := Calloc[int64](ctx, w, 2)
	if err != nil {
		return err
	}
	if got {
		winners.Local()[0] = 1
	}
	if err := SumReduce(ctx, w, winners.Slice(1, 2), winners.Slice(0, 1), 1); err != nil {
		return err
	}
	if winners.Local()[1] != 1 {
		return fmt.Errorf("%d PEs won TestLock", winners.Local()[1])
	}
	if got {
		if err := w.ClearLock(ctx, lock); err != nil {
			return err
		}
	}
	return errors.Join(Free(ctx, winners), Free(ctx, ctr), Free(ctx, lock))
}

// roleCtx: a long non-blocking put on a created context is complete after
// that context's Quiet (the right neighbour sees the data once a flag sent
// afterwards on the default context arrives); destroyed contexts are refused.
func roleCtx(ctx context.Context, w *World) error {
	me, n := w.MyPE(), w.NPEs()
	right, left := (me+1)%n, (me+n-1)%n
	const size = 50000
	data, err := Calloc[uint32](ctx, w, size)
	if err != nil {
		return err
	}
	flag, err := Calloc[uint64](ctx, w, 1)
	if err != nil {
		return err
	}
	c1, err := w.CtxCreate(CtxPrivate)
	if err != nil {
		return err
	}
	c2, err := w.CtxCreate(0)
	if err != nil {
		return err
	}
	src := make([]uint32, size)
	for i := range src {
		src[i] = pattern(me, i)
	}
	if err := PutNBI(ctx, c1, data, src, right); err != nil {
		return err
	}
	// c2 has nothing outstanding: its quiet returns at once and says nothing
	// about c1.
	if err := c2.Quiet(ctx); err != nil {
		return err
	}
	if err := c1.Quiet(ctx); err != nil {
		return err
	}
	if err := AtomicSet(ctx, w.Ctx(), flag, 1, right); err != nil {
		return err
	}
	if err := WaitUntil(ctx, flag, CmpEQ, 1); err != nil {
		return err
	}
	for _, i := range []int{0, size / 3, size - 1} {
		if got := data.Local()[i]; got != pattern(left, i) {
			return fmt.Errorf("data[%d] = %#x after the flag, want %#x", i, got, pattern(left, i))
		}
	}
	if c1.Options() != CtxPrivate {
		return fmt.Errorf("options %v", c1.Options())
	}
	if err := errors.Join(c1.Destroy(ctx), c2.Destroy(ctx)); err != nil {
		return err
	}
	if err := Put(ctx, c1, data, src[:1], right); !errors.Is(err, ErrInvalidArg) {
		return fmt.Errorf("put on a destroyed context: %v", err)
	}
	if err := c1.Destroy(ctx); !errors.Is(err, ErrInvalidArg) {
		return fmt.Errorf("second destroy: %v", err)
	}
	if err := w.Ctx().Destroy(ctx); !errors.Is(err, ErrInvalidArg) {
		return fmt.Errorf("destroying the default context: %v", err)
	}
	if _, err := w.CtxCreate(1 << 10); !errors.Is(err, ErrInvalidArg) {
		return fmt.Errorf("unknown option: %v", err)
	}
	if err := w.BarrierAll(ctx); err != nil {
		return err
	}
	return errors.Join(Free(ctx, flag), Free(ctx, data))
}

// roleAlloc: every PE gets the same offsets; Align aligns; Calloc zeroes
// memory a freed object dirtied; exhaustion and bad frees are errors.
func roleAlloc(ctx context.Context, w *World) error {
	n := w.NPEs()
	a, err := Malloc[int64](ctx, w, 100)
	if err != nil {
		return err
	}
	b, err := Align[byte](ctx, w, 4096, 10)
	if err != nil {
		return err
	}
	if b.off%4096 != 0 {
		return fmt.Errorf("Align(4096) gave offset %d", b.off)
	}
	mine, err := Malloc[int64](ctx, w, 2)
	if err != nil {
		return err
	}
	all, err := Calloc[int64](ctx, w, 2*n)
	if err != nil {
		return err
	}
	mine.Local()[0], mine.Local()[1] = int64(a.off), int64(b.off)
	if err := FCollect(ctx, w, all, mine, 2); err != nil {
		return err
	}
	for pe := 0; pe < n; pe++ {
		if all.Local()[2*pe] != int64(a.off) || all.Local()[2*pe+1] != int64(b.off) {
			return fmt.Errorf("PE %d has offsets %v, this PE %d %d", pe, all.Local()[2*pe:2*pe+2], a.off, b.off)
		}
	}
	for i := range a.Local() {
		a.Local()[i] = -1
	}
	off := a.off
	if err := Free(ctx, a); err != nil {
		return err
	}
	z, err := Calloc[int64](ctx, w, 100)
	if err != nil {
		return err
	}
	if z.off != off {
		return fmt.Errorf("Calloc after Free at %d, not the freed %d", z.off, off)
	}
	for i, v := range z.Local() {
		if v != 0 {
			return fmt.Errorf("Calloc: [%d] = %d", i, v)
		}
	}
	if _, err := Malloc[byte](ctx, w, w.HeapSize()+1); !errors.Is(err, ErrNoSpace) {
		return fmt.Errorf("Malloc beyond the heap: %v", err)
	}
	if _, err := Malloc[int64](ctx, w, -1); !errors.Is(err, ErrInvalidArg) {
		return fmt.Errorf("Malloc(-1): %v", err)
	}
	if _, err := Align[int64](ctx, w, 3, 1); !errors.Is(err, ErrInvalidArg) {
		return fmt.Errorf("Align(3): %v", err)
	}
	if err := Free(ctx, z.Slice(1, 2)); !errors.Is(err, ErrInvalidArg) {
		return fmt.Errorf("Free of a view: %v", err)
	}
	if err := errors.Join(Free(ctx, z), Free(ctx, all), Free(ctx, mine), Free(ctx, b)); err != nil {
		return err
	}
	if err := Free(ctx, z); !errors.Is(err, ErrInvalidArg) {
		return fmt.Errorf("double Free: %v", err)
	}
	return nil
}

// roleErrors: bad arguments are typed errors, never panics.
func roleErrors(ctx context.Context, w *World) error {
	n := w.NPEs()
	c := w.Ctx()
	s, err := Calloc[int64](ctx, w, 4)
	if err != nil {
		return err
	}
	var errs []error
	expect := func(what string, err, kind error) {
		var oe *OpError
		if !errors.Is(err, kind) || !errors.As(err, &oe) {
			errs = append(errs, fmt.Errorf("%s: %v, want %v in an *OpError", what, err, kind))
		}
	}
	expect("put to PE n", Put(ctx, c, s, []int64{1}, n), ErrInvalidPE)
	expect("put to PE -1", Put(ctx, c, s, []int64{1}, -1), ErrInvalidPE)
	expect("put past the end", Put(ctx, c, s, make([]int64, 5), 0), ErrOutOfRange)
	expect("get past the end", Get(ctx, c, make([]int64, 5), s, 0), ErrOutOfRange)
	expect("bad slice", Put(ctx, c, s.Slice(3, 9), []int64{1}, 0), ErrOutOfRange)
	expect("bad At", P(ctx, c, s.At(4), 1, 0), ErrOutOfRange)
	_, err = G(ctx, c, Sym[int64]{}, 0)
	expect("zero Sym", err, ErrOutOfRange)
	expect("stride 0", IPut(ctx, c, s, []int64{1, 2}, 0, 1, 2, 0), ErrInvalidArg)
	expect("strided past the end", IPut(ctx, c, s, []int64{1, 2, 3}, 2, 1, 3, 0), ErrOutOfRange)
	expect("strided source too short", IGet(ctx, c, make([]int64, 2), s, 2, 1, 2, 0), ErrOutOfRange)
	_, err = AtomicFetchAdd(ctx, c, s.Slice(0, 0), 1, 0)
	expect("atomic on an empty view", err, ErrOutOfRange)
	expect("nil context", Put(ctx, nil, s, []int64{1}, 0), ErrInvalidArg)
	_, err = Test(s, Cmp(99), 0)
	expect("bad comparison", err, ErrInvalidArg)
	expect("bad signal op", PutSignal(ctx, c, s, []int64{1}, Sym[uint64]{w: w, off: s.off, n: 1}, 1, SignalOp(9), 0), ErrInvalidArg)
	expect("broadcast from PE n", Broadcast(ctx, w, s, s, 1, n), ErrInvalidPE)
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	err = WaitUntil(canceled, s, CmpEQ, 1)
	if !errors.Is(err, context.Canceled) {
		errs = append(errs, fmt.Errorf("WaitUntil with a canceled context: %v", err))
	}
	if _, err := Init(ctx, nil); !errors.Is(err, ErrInvalidArg) {
		errs = append(errs, fmt.Errorf("second Init: %v", err))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return Free(ctx, s)
}
