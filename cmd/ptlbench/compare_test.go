package main

import (
	"bytes"
	"context"
	"errors"
	"image/png"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"
)

// fiOutput is fi_pingpong's client output (libfabric 1.17, shm provider).
const fiOutput = `bytes   #sent   #ack     total       time     MB/sec    usec/xfer   Mxfers/sec
8       10k     =10k     156k        0.01s     13.69       0.58       1.71
`

func TestParseFiPingpong(t *testing.T) {
	v, err := parseFiPingpong(fiOutput, 8)
	if err != nil {
		t.Fatal(err)
	}
	if v[latency] != 0.58 || v[bandwidth] != 13.69 {
		t.Fatalf("got %v, want latency 0.58 and MB/s 13.69", v)
	}
	// The columns are found by the header, wherever they are.
	moved := "bytes usec/xfer MB/sec\n1m 118.06 8881.57\n"
	if v, err := parseFiPingpong(moved, 1<<20); err != nil || v[latency] != 118.06 || v[bandwidth] != 8881.57 {
		t.Fatalf("reordered columns: %v, %v", v, err)
	}
	// A slow small message: MB/sec rounds to nothing, so the bandwidth comes
	// from the latency (8 bytes in 12.5 µs).
	slow := "bytes #sent #ack total time MB/sec usec/xfer Mxfers/sec\n8 100 =100 1.6k 0.00s 0.00 12.50 0.08\n"
	if v, err := parseFiPingpong(slow, 8); err != nil || v[latency] != 12.5 || v[bandwidth] != 0.64 {
		t.Fatalf("slow row: %v, %v; want latency 12.5 and MB/s 0.64", v, err)
	}
	for _, bad := range []string{
		"",
		"[error] util/pingpong.c:408 : failed to connect: Connection refused\n",
		"bytes #sent usec/xfer\n8 10k 0.5\n",                         // no MB/sec
		"bytes MB/sec usec/xfer\n8 13.69 fast\n",                     // not a number
		"8       10k     =10k     156k   0.01s  13.69  0.58  1.71\n", // no header
		"bytes MB/sec usec/xfer\n8 0.00 0.00\n",                      // no time
	} {
		if v, err := parseFiPingpong(bad, 8); err == nil {
			t.Errorf("parseFiPingpong(%q) = %v, want an error", bad, v)
		}
	}
}

// ucxOutput is ucx_perftest's client output with -f -v (UCX 1.13).
const ucxOutput = `iterations,50.0_percentile_lat,avg_lat,overall_lat,avg_bw,overall_bw,avg_mr,overall_mr
2000,50.680,63.281,63.281,15802.43,15802.43,15802,15802
`

func TestParseUCXPerftest(t *testing.T) {
	lat, err := parseUCXPerftest(ucxOutput, latency)
	if err != nil || lat != 63.281 {
		t.Fatalf("latency %v, %v; want 63.281", lat, err)
	}
	bw, err := parseUCXPerftest(ucxOutput, bandwidth)
	// UCX prints MiB/s; the table is in 10^6 B/s.
	if want := 15802.43 * 1048576 / 1e6; err != nil || math.Abs(bw-want) > 1e-6 {
		t.Fatalf("bandwidth %v, %v; want %v", bw, err, want)
	}
	for _, bad := range []string{
		"",
		"UCX  ERROR client failed. connect() failed: Connection refused\n",
		"iterations,avg_lat\n10,0.2\n",          // no overall_lat
		"iterations,overall_lat\n",              // no row
		"iterations,overall_lat,x\n10,slow,1\n", // not a number
	} {
		if v, err := parseUCXPerftest(bad, latency); err == nil {
			t.Errorf("parseUCXPerftest(%q) = %v, want an error", bad, v)
		}
	}
}

func TestParseXferJSON(t *testing.T) {
	out := []byte(`[{"size": 8, "latency_us": 2.65}, {"size": 16, "latency_us": 2.70}]` + "\n")
	if v, err := parseXferJSON(out, colLatency, 16); err != nil || v != 2.70 {
		t.Fatalf("got %v, %v; want 2.70", v, err)
	}
	for _, tc := range []struct {
		out    string
		column string
		size   int
	}{
		{`[{"size": 8, "latency_us": 2.65}]`, colLatency, 32},
		{`[{"size": 8, "latency_us": 2.65}]`, colMBs, 8},
		{`# ptlbench put_lat`, colLatency, 8},
	} {
		if v, err := parseXferJSON([]byte(tc.out), tc.column, tc.size); err == nil {
			t.Errorf("parseXferJSON(%q, %s, %d) = %v, want an error", tc.out, tc.column, tc.size, v)
		}
	}
}

func TestParseSizes(t *testing.T) {
	s, err := parseSizes("1048576, 8,8,64")
	if err != nil || len(s) != 3 || s[0] != 8 || s[1] != 64 || s[2] != 1048576 {
		t.Fatalf("got %v, %v", s, err)
	}
	for _, bad := range []string{"", "0", "8,x", "-8", "2147483648"} {
		if _, err := parseSizes(bad); !errors.Is(err, errUsage) {
			t.Errorf("parseSizes(%q): %v, want errUsage", bad, err)
		}
	}
}

func TestChoosePeers(t *testing.T) {
	cs, err := choosePeers("memcpy, cma,memcpy")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range cs {
		names = append(names, c.key)
	}
	if strings.Join(names, " ") != "goportals memcpy cma" {
		t.Fatalf("chose %v", names)
	}
	all, err := choosePeers("all")
	if err != nil || len(all) != 1+len(peerNames()) {
		t.Fatalf("all: %d contenders, %v", len(all), err)
	}
	if _, err := choosePeers("memcpy,mpich"); !errors.Is(err, errUsage) {
		t.Fatalf("unknown peer: %v, want errUsage", err)
	}
}

// TestRatioIsSameRound: the ratio is the median of the per-round ratios, over
// the rounds where both values exist, not the ratio of the medians.
func TestRatioIsSameRound(t *testing.T) {
	s := newSamples(4)
	a := sampleKey{ours, 8, latency, quiet}
	b := sampleKey{"peer", 8, latency, quiet}
	for i, v := range []float64{2, 4, 6, 100} {
		s.set(a, i, v)
	}
	for i, v := range []float64{1, 1, 4} { // round 3 missing
		s.set(b, i, v)
	}
	if m, n := s.median(a); m != 5 || n != 4 {
		t.Fatalf("median of ours %v over %d, want 5 over 4", m, n)
	}
	if m, n := s.median(b); m != 1 || n != 3 {
		t.Fatalf("median of peer %v over %d, want 1 over 3", m, n)
	}
	// Same-round ratios 2, 4, 1.5: median 2 (the medians' ratio would be 5).
	if q, n := s.ratio(a, b); q != 2 || n != 3 {
		t.Fatalf("ratio %v over %d rounds, want 2 over 3", q, n)
	}
	if q, n := s.ratio(a, sampleKey{"absent", 8, latency, quiet}); !math.IsNaN(q) || n != 0 {
		t.Fatalf("ratio to nothing: %v over %d", q, n)
	}
}

// syntheticRun is a finished comparison with made-up values: goportals and one
// peer, two sizes, quiet and busy, three rounds.
func syntheticRun() *compareRun {
	r := &compareRun{sizes: []int{8, 1 << 20}, loads: []load{quiet, busy}, rounds: 3, s: newSamples(3),
		contenders: []*contender{{key: "goportals", name: ours}, {key: "peer", name: "peer ping"}}}
	set := func(name string, size int, m metric, l load, vals ...float64) {
		for i, v := range vals {
			r.s.set(sampleKey{name, size, m, l}, i, v)
		}
	}
	set(ours, 8, latency, quiet, 1.5, 1.4, 1.6)
	set("peer ping", 8, latency, quiet, 0.75, 0.7, 1.6)
	set(ours, 8, latency, busy, 3, 2.8, 4.8)
	set("peer ping", 8, latency, busy, 1.5, 2.1, 1.6)
	set(ours, 1<<20, bandwidth, quiet, 7000, 8000, 9000)
	set("peer ping", 1<<20, bandwidth, quiet, 10000, 10000, 10000)
	set(ours, 8, bandwidth, quiet, 5, 6, 7)
	set(ours, 1<<20, latency, quiet, 300, 310, 320)
	return r
}

func TestCompareTable(t *testing.T) {
	r := syntheticRun()
	r.notes = []string{"skipped ucx_perftest put: not installed"}
	var out bytes.Buffer
	if err := r.table(&out); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	t.Logf("\n%s", got)
	for _, want := range []string{
		// Same-round latency ratios 2, 2, 1: median 2.
		`latency_us 8 quiet peer ping 0.7500 2.00x 3`,
		`latency_us 8 quiet goportals put 1.500 - 3`,
		// 0.7, 0.8, 0.9.
		`MB/s 1048576 quiet peer ping 10000 0.80x 3`,
		`MB/s 1048576 quiet goportals put 8000 - 3`,
		// Busy over quiet: ours 2, 2, 3 -> 2; the peer's 2, 3, 1 -> 2; ours over
		// the peer's, same round: 1, 0.67, 3 -> 1.
		`8 bytes goportals put busy/quiet 2.00x (n 3)`,
		`8 bytes peer ping busy/quiet 2.00x (n 3), goportals' degradation / this one's 1.00x (n 3)`,
		`# skipped ucx_perftest put: not installed`,
	} {
		if !strings.Contains(squeeze(got), want) {
			t.Errorf("table lacks %q", want)
		}
	}
	// A contender without values at a size and metric has no row.
	if strings.Contains(got, "MB/s       8          quiet  peer") {
		t.Errorf("table has a row for a peer without values")
	}
}

// squeeze collapses runs of spaces.
func squeeze(s string) string { return regexp.MustCompile(` +`).ReplaceAllString(s, " ") }

func TestPlotCompare(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cmp.png")
	if err := plotCompare(path, syntheticRun()); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("not a PNG: %v", err)
	}
	b := img.Bounds()
	if b.Dx() < 400 || b.Dy() < 200 || b.Dx() <= b.Dy() {
		t.Fatalf("image %v: want two panels side by side", b)
	}
	colors := map[[3]uint32]bool{}
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			r, g, bl, _ := img.At(x, y).RGBA()
			colors[[3]uint32{r >> 8, g >> 8, bl >> 8}] = true
		}
	}
	if len(colors) < 4 {
		t.Fatalf("image has %d colors: nothing drawn", len(colors))
	}
	empty := &compareRun{sizes: []int{8}, loads: []load{quiet}, rounds: 1, s: newSamples(1),
		contenders: []*contender{{key: "goportals", name: ours}}}
	if err := plotCompare(filepath.Join(t.TempDir(), "empty.png"), empty); err == nil {
		t.Fatal("plotting no measurement succeeded")
	}
}

func TestSizeLabel(t *testing.T) {
	for n, want := range map[int]string{8: "8", 1000: "1000", 1024: "1K", 3 << 10: "3K", 1 << 20: "1M", 1<<20 + 1024: "1025K", 1 << 30: "1G"} {
		if got := sizeLabel(n); got != want {
			t.Errorf("sizeLabel(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestPeers runs each installed peer program once at 8 bytes.
func TestPeers(t *testing.T) {
	saved := xferOpts.timeout
	t.Cleanup(func() { xferOpts.timeout = saved })
	xferOpts.timeout = time.Minute
	for _, c := range peers() {
		t.Run(c.key, func(t *testing.T) {
			prog := map[string]string{"fi-shm": "fi_pingpong", "fi-tcp": "fi_pingpong", "ucx": "ucx_perftest"}[c.key]
			if prog == "" {
				t.Skip("a baseline of ours, tested on its own")
			}
			if _, err := exec.LookPath(prog); err != nil {
				t.Skipf("%s is not installed (Debian: libfabric-bin, ucx-utils)", prog)
			}
			vals, err := c.run(context.Background(), 8, counts{latWarmup: 10, latIters: 100, bwWarmup: 10, bwMsgs: 100})
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range []metric{latency, bandwidth} {
				if v, ok := vals[m]; !ok || !(v > 0) {
					t.Errorf("%s: %v (present %v), want a positive value", m, v, ok)
				}
			}
		})
	}
}

// TestPeerMissing: a peer program that is not installed gives errPeerMissing
// (which -compare notes and skips).
func TestPeerMissing(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	for _, c := range []*contender{fiPingpong("shm", "rdm"), ucxPerftest()} {
		_, err := c.run(context.Background(), 8, counts{latWarmup: 1, latIters: 1, bwWarmup: 1, bwMsgs: 1})
		if !errors.Is(err, errPeerMissing) {
			t.Errorf("%s without its program: %v, want errPeerMissing", c.name, err)
		}
	}
}

func TestCompareUsage(t *testing.T) {
	for _, args := range [][]string{
		{"-compare", "put_lat"},
		{"-compare", "-rounds", "0"},
		{"-compare", "-warmup", "-1"},
		{"-compare", "-sizes", "8,zero"},
		{"-compare", "-peers", "mpich"},
		{"-plot", "cmp.svg"},
	} {
		var out, errb bytes.Buffer
		if rc := run(args, &out, &errb); rc != 2 {
			t.Errorf("ptlbench %v: rc %d, want 2; stderr %s", args, rc, errb.String())
		}
	}
}

// TestCompareRun runs ptlbench -compare end to end with short counts: goportals
// (two rank processes), the baselines and fi_pingpong shm (noted as skipped when
// it is not installed), two rounds, with a plot. (The sizes are large enough
// that goportals' bandwidth does not round to 0.00 MB/s in the ranks' JSON on a
// slow host.)
func TestCompareRun(t *testing.T) {
	png := filepath.Join(t.TempDir(), "cmp.png")
	b := mustRun(t, 0, "-compare", "-rounds", "2", "-iters", "20", "-window", "4", "-timeout", "1m",
		"-sizes", "1024,65536", "-peers", "fi-shm,cma,memcpy", "-plot", png)
	t.Logf("\n%s", b.stdout)
	rows := map[string]bool{}
	for _, l := range strings.Split(b.stdout, "\n") {
		f := strings.Fields(l)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") || f[0] == "metric" {
			continue
		}
		// metric size host contender... value ratio n
		if len(f) < 7 {
			t.Fatalf("row %q", l)
		}
		checkValue(t, l, f[len(f)-3])
		if n := f[len(f)-1]; n != "2" {
			t.Errorf("row %q: over %s rounds, want 2", l, n)
		}
		rows[f[0]+" "+f[1]+" "+strings.Join(f[3:len(f)-3], " ")] = true
	}
	want := []string{"latency_us 1024 goportals put", "latency_us 65536 goportals put", "MB/s 1024 goportals put",
		"MB/s 65536 goportals put", "MB/s 65536 memcpy (one process)"}
	if _, err := cmaBandwidth(context.Background(), 8, 0, 1); err == nil {
		want = append(want, "MB/s 65536 process_vm_writev")
	}
	if _, err := exec.LookPath("fi_pingpong"); err == nil {
		want = append(want, "latency_us 1024 fi_pingpong shm")
	} else if !strings.Contains(b.stdout, "# skipped fi_pingpong shm:") {
		t.Errorf("fi_pingpong is missing and the table does not say so")
	}
	for _, w := range want {
		if !rows[w] {
			t.Errorf("no row %q", w)
		}
	}
	if runtime.GOOS == "linux" && !regexp.MustCompile(`# host before the run: load average [0-9.]+ \(1 min\), [0-9]+/[0-9]+ runnable/total tasks; after: load average`).MatchString(b.stdout) {
		t.Errorf("no note of the host's load")
	}
	if !strings.Contains(b.stdout, "# plot written to "+png) {
		t.Errorf("no plot line")
	}
	if st, err := os.Stat(png); err != nil || st.Size() == 0 {
		t.Fatalf("plot: %v", err)
	}
}

func TestFormat(t *testing.T) {
	for v, want := range map[float64]string{0.58: "0.5800", 1.44: "1.440", 3377.62: "3378", 11900.4: "11900", 0.0123: "0.01230", 0: "0.00"} {
		if got := fmtValue(v); got != want {
			t.Errorf("fmtValue(%v) = %q, want %q", v, got, want)
		}
	}
	for q, want := range map[float64]string{1.894: "1.89x", 0.59: "0.59x", 0.00123: "0.0012x", 188.55: "188.55x"} {
		if got := fmtRatio(q); got != want {
			t.Errorf("fmtRatio(%v) = %q, want %q", q, got, want)
		}
	}
	if got := fmtRatio(math.NaN()); got != "-" {
		t.Errorf("fmtRatio(NaN) = %q", got)
	}
}

func TestRoundLoads(t *testing.T) {
	both := []load{quiet, busy}
	if got := roundLoads(both, 0); got[0] != quiet || got[1] != busy {
		t.Fatalf("round 0: %v", got)
	}
	if got := roundLoads(both, 1); got[0] != busy || got[1] != quiet {
		t.Fatalf("round 1: %v", got)
	}
	if both[0] != quiet {
		t.Fatal("roundLoads reordered its argument")
	}
}

// TestCompareBusy runs -compare -busy end to end on goportals alone: every
// round measures it on a quiet host and beside the spinner, and the table
// gives both and the degradation.
func TestCompareBusy(t *testing.T) {
	b := mustRun(t, 0, "-compare", "-busy", "-rounds", "2", "-iters", "20", "-window", "4", "-timeout", "1m",
		"-sizes", "8", "-peers", "none")
	t.Logf("\n%s", b.stdout)
	out := squeeze(b.stdout)
	for _, want := range []string{"latency_us 8 quiet goportals put", "latency_us 8 busy goportals put",
		"MB/s 8 busy goportals put", "# 8 bytes goportals put busy/quiet", "# busy host: a third process spins on cpu "} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if !regexp.MustCompile(`busy host, 8 bytes: goportals put: latency_us [0-9.]+ MB/s [0-9.]+\n`).MatchString(b.ranks) {
		t.Errorf("the progress lines name no busy measurement:\n%s", b.ranks)
	}
}
