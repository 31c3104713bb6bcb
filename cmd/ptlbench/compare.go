package main

// ptlbench -compare measures goportals beside other ways of moving data between
// two processes on this host, in one run: libfabric's fi_pingpong (shm and tcp
// providers) and UCX's ucx_perftest when they are installed, and two baselines
// of ours, process_vm_writev into another process and memcpy inside one. Every
// round measures every contender once at every size, in an order that rotates
// from round to round, so slow drifts of the host (other jobs, frequency) fall
// on all of them alike. A ratio is goportals' value over the peer's, taken
// within each round and reported as the median over the rounds where both
// values exist, with that number of rounds. Warm-up rounds (-warmup, 1 by
// default) run first and are not counted: whichever contender measures first
// in a run pays for the host waking up. With -busy, every round measures
// everything twice, on a quiet host and beside a third process that spins on
// one core, so the cost of a busy node is compared in the same run.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
)

// compareOpts are the flags of the comparison mode.
var compareOpts struct {
	enabled bool
	plot    string
	rounds  int
	warmup  int
	busy    bool
	sizes   string
	peers   string
}

// defaultCompareSizes are the sizes of a table-only run: the small-message
// latency and the long-transfer bandwidth.
const defaultCompareSizes = "8,1048576"

// defaultPlotSizes are the sizes of a run that draws curves.
const defaultPlotSizes = "8,64,512,4096,32768,262144,1048576"

// compareFlags registers the comparison flags.
func compareFlags(fs *flag.FlagSet) {
	o := &compareOpts
	fs.BoolVar(&o.enabled, "compare", false, "compare goportals' put latency and bandwidth with the peers that are installed (fi_pingpong shm and tcp, ucx_perftest) and with process_vm_writev and memcpy, interleaved round by round in one run; takes no TEST")
	fs.StringVar(&o.plot, "plot", "", "with -compare (implied): draw latency and bandwidth over message sizes, goportals and the peers, into this PNG file")
	fs.IntVar(&o.rounds, "rounds", 5, "-compare: interleaved rounds")
	fs.IntVar(&o.warmup, "warmup", 1, "-compare: rounds before the measured ones, every contender at every size, not counted (the first measurement of a run pays for the host waking up); a goportals failure in one fails the run as in any round")
	fs.BoolVar(&o.busy, "busy", false, "-compare: measure every contender also beside a third process spinning on one core, in the same rounds")
	fs.StringVar(&o.sizes, "sizes", "", "-compare: comma-separated message sizes in bytes (default "+defaultCompareSizes+", or "+defaultPlotSizes+" with -plot)")
	fs.StringVar(&o.peers, "peers", "all", "-compare: comma-separated contenders besides goportals, from "+strings.Join(peerNames(), ", ")+", or all, or none")
}

// compareTest is what ptlbench runs with -compare (in place of a TEST).
var compareTest = &test{name: "-compare", summary: "goportals beside the peers and baselines", run: runCompare}

// compareRequested reports whether the flags ask for the comparison mode.
func compareRequested() bool { return compareOpts.enabled || compareOpts.plot != "" }

// metric is what a measurement yields.
type metric int

const (
	latency   metric = iota // one-way latency in µs: lower is better
	bandwidth               // MB/s (10^6 bytes per second): higher is better
)

func (m metric) String() string {
	if m == latency {
		return colLatency
	}
	return colMBs
}

// load is the state of the host during a measurement.
type load int

const (
	quiet load = iota
	busy       // a third process spins on one core
)

func (l load) String() string {
	if l == busy {
		return "busy"
	}
	return "quiet"
}

// counts are the iteration counts of one size, the same for every contender:
// latency round trips, and bandwidth messages (windows times the window).
type counts struct {
	latWarmup, latIters int
	bwWarmup, bwMsgs    int
}

// contender measures one way of moving data at one size. It returns a value for
// the metrics it knows; a peer that cannot run returns errPeerMissing.
type contender struct {
	key  string // as -peers names it
	name string // as the table and the plot's legend show it
	run  func(ctx context.Context, size int, c counts) (map[metric]float64, error)
}

// errPeerMissing marks a peer whose program is not installed.
var errPeerMissing = errors.New("not installed")

// ours is the name of goportals in the tables.
const ours = "goportals put"

// sampleKey names one series of samples, indexed by round.
type sampleKey struct {
	contender string
	size      int
	metric    metric
	load      load
}

// samples holds every measurement of a run: one value per round, NaN where the
// measurement failed or did not run.
type samples struct {
	rounds int
	vals   map[sampleKey][]float64
}

func newSamples(rounds int) *samples {
	return &samples{rounds: rounds, vals: map[sampleKey][]float64{}}
}

func (s *samples) set(k sampleKey, round int, v float64) {
	row, ok := s.vals[k]
	if !ok {
		row = make([]float64, s.rounds)
		for i := range row {
			row[i] = math.NaN()
		}
		s.vals[k] = row
	}
	row[round] = v
}

// median returns the median of the values that exist and how many there are.
func (s *samples) median(k sampleKey) (float64, int) {
	var v []float64
	for _, x := range s.vals[k] {
		if !math.IsNaN(x) {
			v = append(v, x)
		}
	}
	return median(v), len(v)
}

// ratio returns the median over the rounds of num's value over den's in the
// same round, and the number of rounds in which both exist.
func (s *samples) ratio(num, den sampleKey) (float64, int) {
	a, b := s.vals[num], s.vals[den]
	var r []float64
	for i := 0; i < min(len(a), len(b)); i++ {
		if !math.IsNaN(a[i]) && !math.IsNaN(b[i]) && b[i] > 0 {
			r = append(r, a[i]/b[i])
		}
	}
	return median(r), len(r)
}

// median of v (NaN if empty); v is reordered.
func median(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	slices.Sort(v)
	n := len(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}

// parseSizes reads a comma-separated list of sizes in bytes.
func parseSizes(s string) ([]int, error) {
	var sizes []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > 1<<30 {
			return nil, fmt.Errorf("%w: size %q: need an integer from 1 to 2^30", errUsage, f)
		}
		if !slices.Contains(sizes, n) {
			sizes = append(sizes, n)
		}
	}
	slices.Sort(sizes)
	return sizes, nil
}

// choosePeers returns the contenders that the -peers list names, goportals
// first.
func choosePeers(list string) ([]*contender, error) {
	all := peers()
	chosen := []*contender{oursContender()}
	if strings.TrimSpace(list) == "all" {
		return append(chosen, all...), nil
	}
	for _, f := range strings.Split(list, ",") {
		f = strings.TrimSpace(f)
		if f == "" || f == "none" {
			continue
		}
		i := slices.IndexFunc(all, func(c *contender) bool { return c.key == f })
		if i < 0 {
			return nil, fmt.Errorf("%w: unknown peer %q (have %s)", errUsage, f, strings.Join(peerNames(), ", "))
		}
		if !slices.Contains(chosen, all[i]) {
			chosen = append(chosen, all[i])
		}
	}
	return chosen, nil
}

// compareRun is one comparison: what to measure and what was measured.
type compareRun struct {
	contenders []*contender
	sizes      []int
	loads      []load
	rounds     int
	warmup     int // untimed rounds before the measured ones
	s          *samples
	notes      []string // peers skipped or failed, with the reason
	oursErr    error    // goportals' first failure
	log        io.Writer
}

// runCompare is ptlbench -compare.
func runCompare(ctx context.Context, cfg config) error {
	o := &compareOpts
	if o.rounds < 1 {
		return fmt.Errorf("%w: -rounds must be at least 1", errUsage)
	}
	if o.warmup < 0 {
		return fmt.Errorf("%w: -warmup must be at least 0", errUsage)
	}
	if o.plot != "" && !strings.HasSuffix(strings.ToLower(o.plot), ".png") {
		return fmt.Errorf("%w: -plot writes PNG: name the file FILE.png", errUsage)
	}
	sizeList := o.sizes
	if sizeList == "" {
		sizeList = defaultCompareSizes
		if o.plot != "" {
			sizeList = defaultPlotSizes
		}
	}
	sizes, err := parseSizes(sizeList)
	if err != nil {
		return err
	}
	cs, err := choosePeers(o.peers)
	if err != nil {
		return err
	}
	r := &compareRun{contenders: cs, sizes: sizes, loads: []load{quiet}, rounds: o.rounds,
		warmup: o.warmup, s: newSamples(o.rounds), log: os.Stderr}
	if o.busy {
		r.loads = append(r.loads, busy)
	}
	before := loadAverage()
	if err := r.measure(ctx); err != nil {
		return err
	}
	if before != "" {
		r.notes = append(r.notes, "host before the run: "+before+"; after: "+loadAverage())
	}
	if err := r.table(cfg.out); err != nil {
		return err
	}
	if o.plot != "" {
		if err := plotCompare(o.plot, r); err != nil {
			return err
		}
		if _, err := fmt.Fprintf(cfg.out, "# plot written to %s\n", o.plot); err != nil {
			return err
		}
	}
	if r.oursErr != nil {
		return fmt.Errorf("%w: goportals: %v", errFailed, r.oursErr)
	}
	return nil
}

// measure runs the warm-up rounds, whose values it drops, then the measured
// rounds. A peer that is missing is noted once and dropped; a peer that fails is
// noted and measured again in the next round (a failure in a warm-up round is
// noted apart from the first in a measured one). A goportals failure, warm-up or
// not, fails the run.
func (r *compareRun) measure(ctx context.Context) error {
	missing := map[string]bool{}
	failed := map[string]bool{}
	for round := -r.warmup; round < r.rounds; round++ {
		for _, l := range roundLoads(r.loads, round) {
			var sp *spinner
			if l == busy {
				var err error
				if sp, err = startSpinner(ctx); err != nil {
					return fmt.Errorf("busy host: %w", err)
				}
				if note := "busy host: a third process spins on cpu " + sp.cpu; !slices.Contains(r.notes, note) {
					r.notes = append(r.notes, note)
				}
			}
			for _, size := range r.sizes {
				c := iterationCounts(size)
				for i := range r.contenders {
					// Rotate the order from round to round (the warm-up
					// rounds, numbered below 0, continue the rotation into
					// round 1).
					n := len(r.contenders)
					k := r.contenders[((i+round)%n+n)%n]
					if missing[k.name] {
						continue
					}
					if err := ctx.Err(); err != nil {
						sp.stop()
						return err
					}
					vals, err := k.run(ctx, size, c)
					fmt.Fprintf(r.log, "ptlbench -compare: %s, %s host, %d bytes: %s:%s\n", r.roundName(round), l, size, k.name, fmtVals(vals, err))
					switch {
					case errors.Is(err, errPeerMissing) || errors.Is(err, errNotSupported):
						missing[k.name] = true
						r.notes = append(r.notes, fmt.Sprintf("skipped %s: %v", k.name, err))
						continue
					case err != nil && ctx.Err() != nil:
						sp.stop()
						return ctx.Err()
					case err != nil && k.name == ours:
						if r.oursErr == nil {
							r.oursErr = fmt.Errorf("%s, %s host, %d bytes: %w", r.roundName(round), l, size, err)
						}
					case err != nil && round < 0:
						// Noted, but a failure in a measured round is noted
						// too: the warm-up's does not stand for it.
						if note := fmt.Sprintf("%s failed in a warm-up round, not counted (%s host, %d bytes): %v", k.name, l, size, err); !slices.Contains(r.notes, note) {
							r.notes = append(r.notes, note)
						}
					case err != nil:
						if !failed[k.name] {
							failed[k.name] = true
							r.notes = append(r.notes, fmt.Sprintf("%s failed (%s, %s host, %d bytes): %v", k.name, r.roundName(round), l, size, err))
						}
					}
					if round < 0 {
						continue // a warm-up: its values are dropped
					}
					for m, v := range vals {
						r.s.set(sampleKey{k.name, size, m, l}, round, v)
					}
				}
			}
			if err := sp.stop(); err != nil {
				return fmt.Errorf("busy host: %w", err)
			}
		}
	}
	return nil
}

// roundName names a round of measure for the progress lines and the notes: the
// measured ones from 1, the warm-up ones (numbered below 0) apart.
func (r *compareRun) roundName(round int) string {
	if round < 0 {
		return fmt.Sprintf("warm-up round %d/%d, not counted", round+r.warmup+1, r.warmup)
	}
	return fmt.Sprintf("round %d/%d", round+1, r.rounds)
}

// fmtVals writes one measurement for the progress lines.
func fmtVals(vals map[metric]float64, err error) string {
	var b strings.Builder
	for _, m := range []metric{latency, bandwidth} {
		if v, ok := vals[m]; ok {
			fmt.Fprintf(&b, " %s %s", m, fmtValue(v))
		}
	}
	if err != nil {
		fmt.Fprintf(&b, " (%v)", err)
	}
	return b.String()
}

// roundLoads returns the loads in the order of one round: reversed every other
// round, so neither load always comes first.
func roundLoads(loads []load, round int) []load {
	out := slices.Clone(loads)
	if round%2 != 0 { // (a warm-up round is numbered below 0)
		slices.Reverse(out)
	}
	return out
}

// table prints the medians and the same-round ratios.
func (r *compareRun) table(w io.Writer) error {
	p := &results{w: w}
	warm := ""
	if r.warmup > 0 {
		warm = fmt.Sprintf(", after %d warm-up round(s) not counted", r.warmup)
	}
	p.printf("# ptlbench -compare: %d interleaved rounds%s; value = median over the rounds; ratio = goportals / contender, median of the same-round ratios, over n rounds\n", r.rounds, warm)
	p.printf("# latency: one-way, half a round trip (lower is better); MB/s = 10^6 bytes/s (higher is better); ping-pong peers count both directions\n")
	p.printf("%-10s %-10s %-6s %-28s %12s %8s %3s\n", "metric", "size", "host", "contender", "value", "ratio", "n")
	for _, m := range []metric{latency, bandwidth} {
		for _, size := range r.sizes {
			for _, l := range r.loads {
				ref := sampleKey{ours, size, m, l}
				for _, c := range r.contenders {
					k := sampleKey{c.name, size, m, l}
					v, n := r.s.median(k)
					if n == 0 {
						continue
					}
					ratio := "-"
					if c.name != ours {
						q, qn := r.s.ratio(ref, k)
						ratio, n = fmtRatio(q), qn
					}
					p.printf("%-10s %-10d %-6s %-28s %12s %8s %3d\n", m, size, l, c.name, fmtValue(v), ratio, n)
				}
			}
		}
	}
	p.printf("# same-round ratios (goportals / contender), round by round\n")
	for _, m := range []metric{latency, bandwidth} {
		for _, size := range r.sizes {
			for _, l := range r.loads {
				ref := sampleKey{ours, size, m, l}
				for _, c := range r.contenders {
					if c.name == ours {
						continue
					}
					q := r.s.roundRatios(ref, sampleKey{c.name, size, m, l})
					if _, n := medianOf(q); n == 0 {
						continue
					}
					line := fmt.Sprintf("#   %s %d %s %s:", m, size, l, c.name)
					for _, x := range q {
						line += " " + fmtRatio(x)
					}
					p.printf("%s\n", line)
				}
			}
		}
	}
	if len(r.loads) > 1 {
		p.printf("# busy host: latency busy/quiet per contender (median of same-round ratios), and goportals' degradation over the contender's\n")
		for _, size := range r.sizes {
			oq, ob := sampleKey{ours, size, latency, quiet}, sampleKey{ours, size, latency, busy}
			oursDeg := r.s.roundRatios(ob, oq)
			for _, c := range r.contenders {
				cq, cb := sampleKey{c.name, size, latency, quiet}, sampleKey{c.name, size, latency, busy}
				deg := r.s.roundRatios(cb, cq)
				d, n := medianOf(deg)
				if n == 0 {
					continue
				}
				line := fmt.Sprintf("#   %d bytes %-28s busy/quiet %s (n %d)", size, c.name, fmtRatio(d), n)
				if c.name != ours {
					rel, rn := medianOf(divRounds(oursDeg, deg))
					line += fmt.Sprintf(", goportals' degradation / this one's %s (n %d)", fmtRatio(rel), rn)
				}
				p.printf("%s\n", line)
			}
		}
	}
	for _, n := range r.notes {
		p.printf("# %s\n", n)
	}
	return p.err
}

// roundRatios returns num/den per round (NaN where either is missing).
func (s *samples) roundRatios(num, den sampleKey) []float64 {
	out := make([]float64, s.rounds)
	a, b := s.vals[num], s.vals[den]
	for i := range out {
		out[i] = math.NaN()
		if i < len(a) && i < len(b) && !math.IsNaN(a[i]) && !math.IsNaN(b[i]) && b[i] > 0 {
			out[i] = a[i] / b[i]
		}
	}
	return out
}

// divRounds divides two per-round series element by element.
func divRounds(a, b []float64) []float64 {
	out := make([]float64, min(len(a), len(b)))
	for i := range out {
		out[i] = math.NaN()
		if !math.IsNaN(a[i]) && !math.IsNaN(b[i]) && b[i] > 0 {
			out[i] = a[i] / b[i]
		}
	}
	return out
}

// medianOf returns the median of the values of v that are not NaN, and their
// number.
func medianOf(v []float64) (float64, int) {
	var x []float64
	for _, f := range v {
		if !math.IsNaN(f) {
			x = append(x, f)
		}
	}
	return median(x), len(x)
}

// fmtValue writes v with at least four significant digits and no exponent.
func fmtValue(v float64) string {
	return strconv.FormatFloat(v, 'f', decimals(v, 4), 64)
}

// fmtRatio writes a ratio with at least two decimals and two significant
// digits, or "-" for none.
func fmtRatio(q float64) string {
	if math.IsNaN(q) {
		return "-"
	}
	return strconv.FormatFloat(q, 'f', max(2, decimals(q, 2)), 64) + "x"
}

// decimals is how many decimals show digits significant digits of v.
func decimals(v float64, digits int) int {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return 2
	}
	return max(0, digits-1-int(math.Floor(math.Log10(math.Abs(v)))))
}
