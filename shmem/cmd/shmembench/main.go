// Command shmembench measures the shmem library between PE 0 and PE 1 of a job
// started by ptlrun (ptlrun -n 2 shmembench): 8-byte put+quiet latency, 1 MiB
// put bandwidth, fetch-add, get and barrier latency, and a GUPS-style random
// access rate. PE 0 issues; PE 1 waits in a barrier (so its progress runs on
// its waiting goroutine) and the other PEs, if any, only join the barriers;
// every PE takes part in the barrier and random-access tests.
//
// Some lines are shaped like the tests of Sandia OpenSHMEM's performance suite
// so that the two can be compared (compare-sos.sh runs both): "put 8 B +
// quiet" is shmem_latency_put_perf's 8-byte row (a put, then quiet, per
// iteration), "put N B xW + quiet" is shmem_bw_put_perf's row for N bytes
// (windows of W blocking puts, each window ended by quiet; -window, -windows),
// "fetch-add 64-bit" is the time per call of shmem_bw_atomics_perf's
// fetch_add row for unsigned long, and the random access test is the HPCC
// RandomAccess update loop of SOS's gups app (whose -m is bytes per PE, where
// -gups-m here is bytes in the whole table).
//
// With -cpu each line also gives the CPU time PE 0's issuing thread used per
// operation and, for bandwidths, the rate that CPU time gives: on a host whose
// cores are shared with other work, the wall-clock figures say how much of a
// core the issuer got as much as what it costs, and the CPU figures separate
// the two.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"time"

	"github.com/goportals/goportals/shmem"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("shmembench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	iters := fs.Int("iters", 20000, "iterations of each latency test")
	bwIters := fs.Int("bw-iters", 400, "transfers of each bandwidth test")
	size := fs.Int("size", 1<<20, "bytes per bandwidth transfer")
	gupsBytes := fs.Int("gups-m", 1<<26, "random access: bytes in the whole table (a power of two)")
	gupsN := fs.Int("gups-n", 1000000, "random access: updates per PE (0: skip)")
	gupsVerify := fs.Bool("gups-verify", true, "random access: apply the updates again, untimed, and check that the table is restored")
	window := fs.Int("window", 64, "puts per quiet in the windowed bandwidth test")
	windows := fs.Int("windows", 100, "windows in the windowed bandwidth test")
	cpu := fs.Bool("cpu", false, "also print the CPU time (user and system) PE 0's issuing thread used per operation, and for bandwidths the rate that CPU time gives (Linux): on a host whose cores are shared, what the issuer costs apart from the time it waited for a core")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *iters <= 0 || *bwIters <= 0 || *size <= 0 || *window <= 0 || *windows <= 0 || *gupsN < 0 || *gupsBytes < 64 || *gupsBytes&(*gupsBytes-1) != 0 {
		fmt.Fprintln(stderr, "shmembench: -iters, -bw-iters, -size, -window and -windows must be positive, -gups-n not negative, -gups-m a power of two of at least 64")
		return 2
	}
	ctx := context.Background()
	w, err := shmem.Init(ctx, &shmem.Options{HeapSize: 2**size + *gupsBytes + 1<<20})
	if err != nil {
		fmt.Fprintln(stderr, "shmembench:", err)
		return 1
	}
	cpuTimes = *cpu
	err = bench(ctx, w, *iters, *bwIters, *size, *window, *windows, stdout)
	if err == nil && *gupsN > 0 {
		err = randomAccess(ctx, w, *gupsBytes, *gupsN, *gupsVerify, stdout)
	}
	err = errors.Join(err, w.Close(ctx))
	if err != nil {
		fmt.Fprintf(stderr, "shmembench: PE %d: %v\n", w.MyPE(), err)
		return 1
	}
	return 0
}

// cpuTimes: -cpu. lastCPU is the CPU time per call of the last timed run on PE
// 0 (negative: not measured).
var (
	cpuTimes bool
	lastCPU  time.Duration = -1
)

// timed runs f n times on PE 0 (after a warm-up of n/10) between barriers and
// returns the time per call.
func timed(ctx context.Context, w *shmem.World, n int, f func() error) (time.Duration, error) {
	return timedThen(ctx, w, n, f, nil)
}

// timedThen is timed with finish (if not nil) run once after the n calls,
// inside the measured time. With -cpu it also sets lastCPU.
func timedThen(ctx context.Context, w *shmem.World, n int, f, finish func() error) (time.Duration, error) {
	if err := w.BarrierAll(ctx); err != nil {
		return 0, err
	}
	var per time.Duration
	lastCPU = -1
	if w.MyPE() == 0 {
		if cpuTimes {
			// The calls run on this goroutine: keep it on one thread to read
			// that thread's CPU time.
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
		}
		for i := 0; i < n/10; i++ {
			if err := f(); err != nil {
				return 0, err
			}
		}
		if finish != nil {
			if err := finish(); err != nil {
				return 0, err
			}
		}
		cpu0, cpuOK := threadCPU()
		start := time.Now()
		for i := 0; i < n; i++ {
			if err := f(); err != nil {
				return 0, err
			}
		}
		if finish != nil {
			if err := finish(); err != nil {
				return 0, err
			}
		}
		per = time.Since(start) / time.Duration(n)
		if cpu1, ok := threadCPU(); cpuTimes && cpuOK && ok {
			lastCPU = (cpu1 - cpu0) / time.Duration(n)
		}
	}
	return per, w.BarrierAll(ctx)
}

func bench(ctx context.Context, w *shmem.World, iters, bwIters, size, window, windows int, out io.Writer) error {
	if w.NPEs() < 2 {
		return fmt.Errorf("needs at least 2 PEs, have %d", w.NPEs())
	}
	c := w.Ctx()
	word, err := shmem.Calloc[uint64](ctx, w, 1)
	if err != nil {
		return err
	}
	buf, err := shmem.Calloc[byte](ctx, w, size)
	if err != nil {
		return err
	}
	src, err := shmem.Malloc[byte](ctx, w, size)
	if err != nil {
		return err
	}
	one := []uint64{42}
	// report prints a line; with -cpu it adds the CPU time per call (per
	// transfer when per divides the timed call into several), and the rate
	// it gives (rate not nil).
	report := func(name string, d time.Duration, extra string, per int, rate func(time.Duration) string) {
		if w.MyPE() != 0 {
			return
		}
		fmt.Fprintf(out, "%-28s %9.3f us%s", name, float64(d.Nanoseconds())/1e3, extra)
		if lastCPU >= 0 {
			c := lastCPU / time.Duration(per)
			fmt.Fprintf(out, "  cpu %9.3f us", float64(c.Nanoseconds())/1e3)
			if rate != nil && c > 0 {
				fmt.Fprintf(out, "%s", rate(c))
			}
		}
		fmt.Fprintln(out)
	}
	d, err := timed(ctx, w, iters, func() error {
		if err := shmem.Put(ctx, c, word, one, 1); err != nil {
			return err
		}
		return c.Quiet(ctx)
	})
	if err != nil {
		return err
	}
	report("put 8 B + quiet", d, "", 1, nil)
	d, err = timed(ctx, w, iters, func() error {
		_, err := shmem.AtomicFetchAdd(ctx, c, word, 1, 1)
		return err
	})
	if err != nil {
		return err
	}
	report("fetch-add 64-bit", d, "", 1, nil)
	d, err = timed(ctx, w, iters, func() error {
		_, err := shmem.G(ctx, c, word, 1)
		return err
	})
	if err != nil {
		return err
	}
	report("get 8 B (shmem_g)", d, "", 1, nil)
	// Every PE runs the barriers (timed reports PE 0's view).
	bar := func() error { return w.BarrierAll(ctx) }
	if w.MyPE() != 0 {
		for i := 0; i < iters/10+iters; i++ {
			if err := bar(); err != nil {
				return err
			}
		}
	}
	d, err = timed(ctx, w, iters, bar)
	if err != nil {
		return err
	}
	report(fmt.Sprintf("barrier_all (%d PEs)", w.NPEs()), d, "", 1, nil)
	d, err = timed(ctx, w, iters, func() error { return shmem.AtomicAdd(ctx, c, word, 1, 1) })
	if err != nil {
		return err
	}
	report("atomic add (issue rate)", d, "", 1, nil)
	if err := w.BarrierAll(ctx); err != nil {
		return err
	}
	bw := func(d time.Duration) string {
		return fmt.Sprintf("  %8.2f GB/s", float64(size)/d.Seconds()/1e9)
	}
	data := src.Local()
	for i := range data {
		data[i] = byte(i)
	}
	d, err = timedThen(ctx, w, bwIters, func() error { return shmem.PutNBI(ctx, c, buf, data, 1) },
		func() error { return c.Quiet(ctx) })
	if err != nil {
		return err
	}
	report(fmt.Sprintf("put_nbi %d B (stream)", size), d, bw(d), 1, bw)
	d, err = timed(ctx, w, bwIters, func() error {
		if err := shmem.Put(ctx, c, buf, data, 1); err != nil {
			return err
		}
		return c.Quiet(ctx)
	})
	if err != nil {
		return err
	}
	report(fmt.Sprintf("put %d B + quiet", size), d, bw(d), 1, bw)
	d, err = timed(ctx, w, windows, func() error {
		for j := 0; j < window; j++ {
			if err := shmem.Put(ctx, c, buf, data, 1); err != nil {
				return err
			}
		}
		return c.Quiet(ctx)
	})
	if err != nil {
		return err
	}
	d /= time.Duration(window)
	report(fmt.Sprintf("put %d B x%d + quiet", size, window), d, bw(d), window, bw)
	goBuf := make([]byte, size)
	d, err = timed(ctx, w, bwIters, func() error { return shmem.Get(ctx, c, goBuf, buf, 1) })
	if err != nil {
		return err
	}
	report(fmt.Sprintf("get %d B into Go memory", size), d, bw(d), 1, bw)
	return errors.Join(shmem.Free(ctx, src), shmem.Free(ctx, buf), shmem.Free(ctx, word))
}

// randomAccess times GUPS-style updates: every PE XORs a pseudo-random value
// into a pseudo-random word of a table spread over all PEs (the HPCC
// RandomAccess generator, as examples/gups), with non-fetching atomics. The
// table starts as its words' global indexes, written before the timed part
// (as the HPCC code does, so no page is first touched while timed); with
// verify the same updates are applied again, untimed, which must restore it.
func randomAccess(ctx context.Context, w *shmem.World, tableBytes, n int, verify bool, out io.Writer) error {
	npes := w.NPEs()
	words := tableBytes / 8
	if npes&(npes-1) != 0 || words < npes {
		return fmt.Errorf("random access needs a power-of-two PE count no larger than the table")
	}
	local := words / npes
	shift := 0
	for 1<<shift < local {
		shift++
	}
	table, err := shmem.Malloc[uint64](ctx, w, local)
	if err != nil {
		return err
	}
	base := uint64(w.MyPE() * local)
	for i := range table.Local() {
		table.Local()[i] = base + uint64(i)
	}
	c := w.Ctx()
	update := func() error {
		ran := uint64(w.MyPE())*0x9e3779b97f4a7c15 | 1
		for i := 0; i < n; i++ {
			if int64(ran) < 0 {
				ran = ran<<1 ^ 7
			} else {
				ran <<= 1
			}
			g := int(ran & uint64(words-1))
			if err := shmem.AtomicXor(ctx, c, table.At(g&(local-1)), ran, g>>shift); err != nil {
				return err
			}
		}
		return w.BarrierAll(ctx) // completes this PE's updates, then waits for all
	}
	if err := w.BarrierAll(ctx); err != nil {
		return err
	}
	start := time.Now()
	if err := update(); err != nil {
		return err
	}
	d := time.Since(start)
	check := ""
	if verify {
		if err := update(); err != nil {
			return err
		}
		errs, err := shmem.Calloc[int64](ctx, w, 2)
		if err != nil {
			return err
		}
		for i, v := range table.Local() {
			if v != base+uint64(i) {
				errs.Local()[0]++
			}
		}
		if err := shmem.SumReduce(ctx, w, errs.Slice(1, 2), errs.Slice(0, 1), 1); err != nil {
			return err
		}
		bad := errs.Local()[1]
		if err := shmem.Free(ctx, errs); err != nil {
			return err
		}
		if bad != 0 {
			return fmt.Errorf("random access: %d of %d words wrong after applying the updates twice", bad, words)
		}
		check = ", verified"
	}
	if w.MyPE() == 0 {
		fmt.Fprintf(out, "%-28s %9.6f GUP/s  (%d updates per PE, %d-byte table, %.3f s%s)\n", "random access (GUPS)",
			float64(n*npes)/d.Seconds()/1e9, n, tableBytes, d.Seconds(), check)
	}
	return shmem.Free(ctx, table)
}
