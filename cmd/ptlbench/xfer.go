package main

// The transfer tests (put_lat, get_lat, put_bw, get_bw, atomic_lat, put_rate) run
// between ranks on the soft provider. Started plainly, ptlbench is the launcher: it
// re-executes its own binary as -np ranks through bootstrap.Launch, marking them
// with rankEnv, and passes rank 0's output through. A rank (marked, or started by
// cmd/ptlrun) opens the bootstrap, builds a Portals process on it, runs the test
// and, on rank 0, prints one row per message size.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"strconv"
	"sync"
	"time"

	"github.com/goportals/goportals/internal/bootstrap"
	"github.com/goportals/goportals/internal/envknob"
	portals "github.com/goportals/goportals/internal/nic"
)

// rankEnv marks a process that ptlbench started as one rank of a transfer test.
const rankEnv = "PTLBENCH_RANK"

// xferOptions are the flags of the transfer tests (shared by all of them: xferOpts).
type xferOptions struct {
	np         int
	minSize    int
	maxSize    int
	iters      int
	window     int
	json       bool
	poll       bool
	timeout    time.Duration
	cpuprofile string
	trace      string
	warm       time.Duration
}

var xferOpts xferOptions

// xferFlags registers the transfer flags once per flag set (every transfer test
// calls it).
func xferFlags(fs *flag.FlagSet) {
	if fs.Lookup("np") != nil {
		return
	}
	o := &xferOpts
	fs.IntVar(&o.np, "np", 2, "transfer tests: ranks to start (the test runs between ranks 0 and 1)")
	fs.IntVar(&o.minSize, "min", 8, "transfer tests: smallest message size in bytes")
	fs.IntVar(&o.maxSize, "max", 4<<20, "transfer tests: largest message size in bytes (sizes double from -min)")
	fs.IntVar(&o.iters, "iters", 0, "transfer tests: timed iterations (operations, round trips or windows) per size, after a tenth as many untimed (0: OSU's counts, 10000 round trips up to 8 KiB and 1000 above, 100 windows up to 8 KiB and 20 above)")
	fs.IntVar(&o.window, "window", 64, "transfer tests: operations in flight per window (put_bw, get_bw, put_rate)")
	fs.BoolVar(&o.json, "json", false, "transfer tests: print one JSON array of rows instead of a table")
	fs.BoolVar(&o.poll, "poll", false, "transfer tests: wait by polling the counting event with CT.Get, leaving progress to the NI's goroutine, instead of CT.Wait (which drives progress, then blocks)")
	fs.DurationVar(&o.timeout, "timeout", 5*time.Minute, "transfer tests: deadline of the whole run")
	fs.StringVar(&o.cpuprofile, "cpuprofile", "", "transfer tests: write each rank's CPU profile to FILE.rankN")
	fs.StringVar(&o.trace, "trace", "", "transfer tests: write each rank's execution trace (runtime/trace) to FILE.rankN")
	fs.DurationVar(&o.warm, "warm", defaultWarm, "transfer tests: each of ranks 0 and 1 spins this long before a size's untimed iterations, so its core is up to speed when the timed ones start (0: no spin)")
}

// column names of the result tables and JSON rows.
const (
	colLatency = "latency_us"
	colMBs     = "MB/s"
	colRate    = "msgs/s"
)

// xferTest describes one transfer test. measure runs on every rank between a
// barrier before and one after; rank 0's value is the row. prepare and check run
// on every rank before and after the timed part of each size: check waits until
// every operation of the size is counted where it landed and reports data that
// did not arrive intact.
type xferTest struct {
	name, summary string
	column        string
	about         string // the table's comment line: what is measured
	fixedSizes    []int  // if set, the sizes (the -min/-max flags do not apply)
	large         bool   // iterations are windows (bandwidth, rate), not single operations
	needDst       bool   // rank 0 needs a destination descriptor (gets, fetches)
	// ownTraffic: the test's traffic does not go through the matching NI
	// (it opens what it measures itself, see bench.open), which the harness
	// then leaves unconnected.
	ownTraffic bool
	prepare    func(b *bench, size int)
	measure    func(ctx context.Context, b *bench, size, warmup, iters int) (float64, error)
	check      func(ctx context.Context, b *bench, size, warmup, iters int) error
}

// xferTests lists the registered transfer tests.
var xferTests []*xferTest

// registerXfer adds a transfer test to ptlbench's registry.
func registerXfer(x *xferTest) {
	xferTests = append(xferTests, x)
	register(&test{name: x.name, summary: x.summary, flags: xferFlags,
		run: func(ctx context.Context, cfg config) error { return runXfer(ctx, cfg, x) }})
}

// errUsage marks a flag value the transfer tests cannot use.
var errUsage = errors.New("bad flags")

func (x *xferTest) sizes() ([]int, error) {
	if x.fixedSizes != nil {
		return x.fixedSizes, nil
	}
	o := &xferOpts
	if o.minSize < 1 || o.maxSize < o.minSize || o.maxSize > 1<<30 {
		return nil, fmt.Errorf("%w: need 1 <= -min <= -max <= 1 GiB, have %d and %d", errUsage, o.minSize, o.maxSize)
	}
	var s []int
	for n := o.minSize; n <= o.maxSize; n *= 2 {
		s = append(s, n)
	}
	return s, nil
}

// iterations returns the warm-up and timed iteration counts for a size. The
// automatic counts are OSU's: latencies 10000 timed after 100 untimed up to
// 8 KiB, 1000 after 10 above; windows 100 after 10, and 20 after 2 above 8 KiB.
// A count given with -iters is preceded by a tenth as many untimed ones.
func (x *xferTest) iterations(size int) (warmup, iters int) {
	if n := xferOpts.iters; n > 0 {
		return max(1, n/10), n
	}
	small := size <= 8<<10
	switch {
	case !x.large && small:
		return 100, 10000
	case !x.large:
		return 10, 1000
	case small:
		return 10, 100
	}
	return 2, 20
}

func runXfer(ctx context.Context, cfg config, x *xferTest) error {
	o := &xferOpts
	if _, err := x.sizes(); err != nil {
		return err
	}
	if o.np < 2 || o.iters < 0 || o.window < 1 || o.timeout <= 0 {
		return fmt.Errorf("%w: need -np >= 2, -iters >= 0, -window >= 1, -timeout > 0", errUsage)
	}
	if os.Getenv(rankEnv) != "" || envknob.Get(envknob.BootstrapAddr) != "" || bootstrap.Launched() {
		return runRank(ctx, cfg, x)
	}
	return launch(ctx, cfg, x)
}

// launch starts the ranks: this very program, with the transfer flags spelled out.
func launch(ctx context.Context, cfg config, x *xferTest) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("cannot find my own binary to start the ranks: %w", err)
	}
	o := &xferOpts
	argv := rankArgv(exe, x)
	res, err := bootstrap.Launch(ctx, bootstrap.LaunchConfig{N: o.np, Argv: argv,
		Env: append(os.Environ(), rankEnv+"=1"), Stdout: cfg.out, Stderr: os.Stderr,
		Timeout: o.timeout + 30*time.Second})
	if err != nil {
		if res != nil && res.ExitCode == 1 {
			return fmt.Errorf("%w: %v", errFailed, err)
		}
		return err
	}
	return nil
}

// rankArgv is the command line of a rank of x: every transfer flag's value as
// this process has it.
func rankArgv(exe string, x *xferTest) []string {
	o := &xferOpts
	return []string{exe,
		"-np", strconv.Itoa(o.np), "-min", strconv.Itoa(o.minSize), "-max", strconv.Itoa(o.maxSize),
		"-iters", strconv.Itoa(o.iters), "-window", strconv.Itoa(o.window), "-timeout", o.timeout.String(),
		"-json=" + strconv.FormatBool(o.json), "-poll=" + strconv.FormatBool(o.poll),
		"-cpuprofile", o.cpuprofile, "-trace", o.trace, "-warm", o.warm.String(), x.name}
}

// runRank is one rank of a transfer test.
func runRank(ctx context.Context, cfg config, x *xferTest) (err error) {
	ctx, cancel := context.WithTimeout(ctx, xferOpts.timeout)
	defer cancel()
	b, err := openBench(ctx, x)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, b.close(ctx, err == nil)) }()
	if p := xferOpts.cpuprofile; p != "" {
		f, err := os.Create(fmt.Sprintf("%s.rank%d", p, b.rank))
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	if p := xferOpts.trace; p != "" {
		f, err := os.Create(fmt.Sprintf("%s.rank%d", p, b.rank))
		if err != nil {
			return err
		}
		defer f.Close()
		if err := trace.Start(f); err != nil {
			return err
		}
		defer trace.Stop()
	}
	sizes, _ := x.sizes()
	out := newResults(cfg.out, x, b.rank == 0, b.ni.Path)
	for i, size := range sizes {
		warmup, iters := x.iterations(size)
		if err := b.link(); err != nil {
			return err
		}
		if x.prepare != nil {
			if err := b.settleSrc(ctx); err != nil {
				return err
			}
			x.prepare(b, size)
		}
		if err := progressBarrier(ctx, b); err != nil {
			return err
		}
		if i == 0 && b.active() && !x.ownTraffic {
			if err := b.open(ctx); err != nil {
				return fmt.Errorf("%s: opening the connection: %w", x.name, err)
			}
		}
		if b.active() {
			spinWarm(xferOpts.warm)
		}
		v, err := x.measure(ctx, b, size, warmup, iters)
		if err != nil {
			return fmt.Errorf("%s, %d bytes: %w", x.name, size, err)
		}
		if err := progressBarrier(ctx, b); err != nil {
			return err
		}
		if x.check != nil {
			if err := x.check(ctx, b, size, warmup, iters); err != nil {
				return fmt.Errorf("%w: %s, %d bytes, rank %d: %v", errFailed, x.name, size, b.rank, err)
			}
		}
		out.row(size, v)
	}
	return out.end()
}

// progressBarrier is the bootstrap barrier around a measurement. With the NIs'
// progress goroutines off (PTL_PROGRESS_GOROUTINE=0) a rank waiting there drives
// nothing, yet its peer may still need it: rank 0 waits for the ACKs of its last
// window of long puts, whose data rank 1's progress pulls. So the rank spins on
// its counting events (CT.Get runs a round of progress: the matching NI's, and
// the direct NI's once the direct tests opened it) until the barrier returns.
func progressBarrier(ctx context.Context, b *bench) error {
	if envknob.Get(envknob.ProgressGoroutine) != "0" || b.recvCT == nil {
		return b.barrier(ctx)
	}
	// (The direct tests' NI, once open, needs driving as much: rank 1 of
	// dput_bw waits here while rank 0 waits for the ACKs its NI answers.)
	var direct *portals.CT
	if d := openedDirect(b); d != nil {
		direct = d.recvCT
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			b.recvCT.Get()
			if direct != nil {
				direct.Get()
			}
			runtime.Gosched()
		}
	}()
	err := b.barrier(ctx)
	close(done)
	wg.Wait()
	return err
}

// defaultWarm is -warm's default. On this project's 2-core VM a core that idled
// through the set-up (the barrier before each size sleeps) ran the first few
// milliseconds of a ping-pong slower: 8-byte put_lat over OSU's 10000 round trips
// measured 0.49–0.53 µs without the spin and 0.42–0.43 µs after 20 ms of it
// (1000-round-trip blocks: 0.6–0.8 µs at first, 0.4 µs after about 4 ms), while
// fi_pingpong, which polls through its own set-up, showed no such start.
const defaultWarm = 20 * time.Millisecond

// spinWarm keeps the calling thread busy for d without touching the engine.
func spinWarm(d time.Duration) {
	for start := time.Now(); time.Since(start) < d; {
	}
	benchStep("spin")
}

// benchEvent, set only by the package's tests, hears a rank's steps around its
// warm spin: "sleep" (a bootstrap barrier or fence: the rank may have left its
// core), "spin" (spinWarm), "go" (the iterations of a size begin after a set-up
// of the measurement's own), "op" (the rank's first operation toward its peer
// on the matching NI, which opens the connection) and "dop" (the same on the
// direct tests' NI), so a test can see that nothing sleeps between the spin and
// the iterations, and that connections open before the spin.
var benchEvent func(step string)

func benchStep(step string) {
	if benchEvent != nil {
		benchEvent(step)
	}
}
