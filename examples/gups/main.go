// Command gups is the HPC Challenge RandomAccess benchmark on shmem: every PE
// applies pseudo-random XOR updates to a table spread over all PEs, with
// atomic XORs to the PE that owns each word, then the updates are applied a
// second time, which must restore the table exactly (the atomics lose no
// update, so the benchmark's 1% error allowance is not needed).
//
// Run it under the launcher:
//
//	ptlrun -n 2 gups -m 67108864 -n 1000000
//
// -m is the size of the whole table in bytes (a power of two, split evenly
// over the PEs, whose count must be a power of two too) and -n the number of
// updates each PE applies. GUP/s is the number of updates of all PEs divided by
// the slowest PE's time, in billions.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/bits"
	"os"
	"runtime/pprof"
	"time"

	"github.com/goportals/goportals/shmem"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

type options struct {
	tableBytes int64
	updates    int64
	verify     bool
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("gups", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	fs.Int64Var(&o.tableBytes, "m", 1<<26, "bytes in the whole table (a power of two)")
	fs.Int64Var(&o.updates, "n", 1<<20, "updates per PE")
	fs.BoolVar(&o.verify, "verify", true, "apply the updates again and check that the table is restored")
	timeout := fs.Duration("timeout", 10*time.Minute, "give up after this long")
	profile := fs.String("cpuprofile", "", "write each PE's CPU profile to FILE.peN")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if o.tableBytes < 8 || bits.OnesCount64(uint64(o.tableBytes)) != 1 || o.updates < 0 {
		fmt.Fprintln(stderr, "gups: -m must be a power of two of at least 8 bytes and -n at least 0")
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	// The heap holds this PE's share of the table plus the library's small
	// collective scratch; the share is known once the PE count is, so ask for
	// the whole table (the heap is mapped lazily; only the share is touched).
	w, err := shmem.Init(ctx, &shmem.Options{HeapSize: int(o.tableBytes) + 1<<20})
	if err != nil {
		fmt.Fprintln(stderr, "gups:", err)
		return 1
	}
	if *profile != "" {
		f, err := os.Create(fmt.Sprintf("%s.pe%d", *profile, w.MyPE()))
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(stderr, "gups:", err)
			w.Close(ctx)
			return 1
		}
		defer f.Close()
		defer pprof.StopCPUProfile()
	}
	res, err := gups(ctx, w, o)
	err = errors.Join(err, w.Close(ctx))
	if err != nil {
		fmt.Fprintf(stderr, "gups: PE %d: %v\n", w.MyPE(), err)
		return 1
	}
	if w.MyPE() == 0 {
		fmt.Fprintf(stdout, "table %d words (%d bytes) over %d PEs, %d updates per PE\n",
			res.words, o.tableBytes, w.NPEs(), o.updates)
		fmt.Fprintf(stdout, "time %.6f s\n", res.seconds)
		fmt.Fprintf(stdout, "GUP/s %.6f\n", res.gups)
		if o.verify {
			fmt.Fprintf(stdout, "verification: %d errors in %d words: %s\n", res.errors, res.words, passed(res.errors))
		}
	}
	if res.errors != 0 {
		return 1
	}
	return 0
}

func passed(errs int64) string {
	if errs == 0 {
		return "PASSED"
	}
	return "FAILED"
}

type result struct {
	words   int64
	seconds float64
	gups    float64
	errors  int64
}

// The generator of the benchmark: x -> 2x over GF(2) modulo the polynomial
// x^63 + ... with low bits poly, and its period.
const (
	poly   = 0x7
	period = 1317624576693539401
)

func next(r uint64) uint64 {
	if int64(r) < 0 {
		return r<<1 ^ poly
	}
	return r << 1
}

// starts returns the n-th value of the sequence (from 1 at n = 0), by squaring
// the step matrix as the benchmark's reference code does: m2[i] is 2^(2i) in
// the field; walking down the bits of n doubles or steps.
func starts(n int64) uint64 {
	for n < 0 {
		n += period
	}
	for n > period {
		n -= period
	}
	if n == 0 {
		return 1
	}
	var m2 [64]uint64
	t := uint64(1)
	for i := range m2 {
		m2[i] = t
		t = next(next(t))
	}
	i := 62
	for i >= 0 && (n>>i)&1 == 0 {
		i--
	}
	ran := uint64(2)
	for i > 0 {
		t = 0
		for j := 0; j < 64; j++ {
			if (ran>>j)&1 != 0 {
				t ^= m2[j]
			}
		}
		ran = t
		i--
		if (n>>i)&1 != 0 {
			ran = next(ran)
		}
	}
	return ran
}

// update applies this PE's n updates: the word at global index ran mod the
// table size, at the PE that owns it, is XORed with ran.
func update(ctx context.Context, w *shmem.World, table shmem.Sym[uint64], words, n int64) error {
	c := w.Ctx()
	local := int64(table.Len())
	shift := bits.TrailingZeros64(uint64(local))
	ran := starts(n * int64(w.MyPE()))
	for i := int64(0); i < n; i++ {
		ran = next(ran)
		g := int64(ran & uint64(words-1))
		if err := shmem.AtomicXor(ctx, c, table.At(int(g&(local-1))), ran, int(g>>shift)); err != nil {
			return err
		}
	}
	return w.BarrierAll(ctx) // completes this PE's updates, then waits for all
}

func gups(ctx context.Context, w *shmem.World, o options) (result, error) {
	npes := int64(w.NPEs())
	words := o.tableBytes / 8
	if bits.OnesCount64(uint64(npes)) != 1 || words < npes {
		return result{}, fmt.Errorf("needs a power-of-two PE count (%d) no larger than the table (%d words)", npes, words)
	}
	local := words / npes
	table, err := shmem.Malloc[uint64](ctx, w, int(local))
	if err != nil {
		return result{}, err
	}
	base := uint64(w.MyPE()) * uint64(local)
	for i := range table.Local() {
		table.Local()[i] = base + uint64(i)
	}
	times, err := shmem.Calloc[float64](ctx, w, 2)
	if err != nil {
		return result{}, err
	}
	if err := w.BarrierAll(ctx); err != nil {
		return result{}, err
	}
	start := time.Now()
	if err := update(ctx, w, table, words, o.updates); err != nil {
		return result{}, err
	}
	times.Local()[0] = time.Since(start).Seconds()
	if err := shmem.MaxReduce(ctx, w, times.Slice(1, 2), times.Slice(0, 1), 1); err != nil {
		return result{}, err
	}
	res := result{words: words, seconds: times.Local()[1]}
	res.gups = float64(o.updates*npes) / res.seconds / 1e9
	if o.verify {
		if err := update(ctx, w, table, words, o.updates); err != nil {
			return res, err
		}
		errs, err := shmem.Calloc[int64](ctx, w, 2)
		if err != nil {
			return res, err
		}
		for i, v := range table.Local() {
			if v != base+uint64(i) {
				errs.Local()[0]++
			}
		}
		if err := shmem.SumReduce(ctx, w, errs.Slice(1, 2), errs.Slice(0, 1), 1); err != nil {
			return res, err
		}
		res.errors = errs.Local()[1]
		if err := shmem.Free(ctx, errs); err != nil {
			return res, err
		}
	}
	return res, errors.Join(shmem.Free(ctx, times), shmem.Free(ctx, table))
}
