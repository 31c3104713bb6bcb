// Command shmembench measures the shmem library between PE 0 and PE 1 of a job
// started by ptlrun (ptlrun -n 2 shmembench): 8-byte put+quiet latency, 1 MiB
// put bandwidth, fetch-add and get latency. PE 0 issues; PE 1 waits in a
// barrier (so its progress runs on its waiting goroutine) and the other PEs, if
// any, only join the barriers.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
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
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *iters <= 0 || *bwIters <= 0 || *size <= 0 {
		fmt.Fprintln(stderr, "shmembench: -iters, -bw-iters and -size must be positive")
		return 2
	}
	ctx := context.Background()
	w, err := shmem.Init(ctx, &shmem.Options{HeapSize: 2**size + 1<<20})
	if err != nil {
		fmt.Fprintln(stderr, "shmembench:", err)
		return 1
	}
	err = bench(ctx, w, *iters, *bwIters, *size, stdout)
	err = errors.Join(err, w.Close(ctx))
	if err != nil {
		fmt.Fprintf(stderr, "shmembench: PE %d: %v\n", w.MyPE(), err)
		return 1
	}
	return 0
}

// timed runs f n times on PE 0 (after a warm-up of n/10) between barriers and
// returns the time per call.
func timed(ctx context.Context, w *shmem.World, n int, f func() error) (time.Duration, error) {
	return timedThen(ctx, w, n, f, nil)
}

// timedThen is timed with finish (if not nil) run once after the n calls,
// inside the measured time.
func timedThen(ctx context.Context, w *shmem.World, n int, f, finish func() error) (time.Duration, error) {
	if err := w.BarrierAll(ctx); err != nil {
		return 0, err
	}
	var per time.Duration
	if w.MyPE() == 0 {
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
	}
	return per, w.BarrierAll(ctx)
}

func bench(ctx context.Context, w *shmem.World, iters, bwIters, size int, out io.Writer) error {
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
	report := func(name string, d time.Duration, extra string) {
		if w.MyPE() == 0 {
			fmt.Fprintf(out, "%-28s %9.3f us%s\n", name, float64(d.Nanoseconds())/1e3, extra)
		}
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
	report("put 8 B + quiet", d, "")
	d, err = timed(ctx, w, iters, func() error {
		_, err := shmem.AtomicFetchAdd(ctx, c, word, 1, 1)
		return err
	})
	if err != nil {
		return err
	}
	report("fetch-add 64-bit", d, "")
	d, err = timed(ctx, w, iters, func() error {
		_, err := shmem.G(ctx, c, word, 1)
		return err
	})
	if err != nil {
		return err
	}
	report("get 8 B (shmem_g)", d, "")
	d, err = timed(ctx, w, iters, func() error { return shmem.AtomicAdd(ctx, c, word, 1, 1) })
	if err != nil {
		return err
	}
	report("atomic add (issue rate)", d, "")
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
	report(fmt.Sprintf("put_nbi %d B (stream)", size), d, bw(d))
	d, err = timed(ctx, w, bwIters, func() error {
		if err := shmem.Put(ctx, c, buf, data, 1); err != nil {
			return err
		}
		return c.Quiet(ctx)
	})
	if err != nil {
		return err
	}
	report(fmt.Sprintf("put %d B + quiet", size), d, bw(d))
	goBuf := make([]byte, size)
	d, err = timed(ctx, w, bwIters, func() error { return shmem.Get(ctx, c, goBuf, buf, 1) })
	if err != nil {
		return err
	}
	report(fmt.Sprintf("get %d B into Go memory", size), d, bw(d))
	return errors.Join(shmem.Free(ctx, src), shmem.Free(ctx, buf), shmem.Free(ctx, word))
}
