package capi_test

import (
	"bufio"
	"context"
	"debug/elf"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/goportals/goportals/portals"
	"github.com/goportals/goportals/portals/ptl"
)

// forkXFail, when set, marks tests/ptl_fork.c as expected to fail and says why;
// the test then fails if the program passes, so the mark cannot outlive its
// reason.
const forkXFail = ""

// cTests are the C programs of tests/ the Go tests build.
var cTests = []string{"ptl_local", "ptl_pair", "ptl_fork", "ptl_putlat", "ptl_callcost", "ptl_nogolib", "ptl_ctspin", "ptl_ownpmi"}

// env is what setup built: an installed prefix, the C programs, ptlrun and
// the Go benchmark.
type env struct {
	prefix string
	bin    map[string]string
	ptlrun string
	goLat  string
}

var (
	setupOnce sync.Once
	built     *env
	setupErr  error
	tmpRoot   string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if tmpRoot != "" {
		os.RemoveAll(tmpRoot)
	}
	os.Exit(code)
}

// setup installs the ABI with `make PREFIX=... install` into a temporary
// prefix and compiles the C tests against it with pkg-config, once per run.
func setup(t *testing.T) *env {
	t.Helper()
	for _, tool := range []string{"make", "gcc", "pkg-config"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("building the C ABI needs %s: %v", tool, err)
		}
	}
	setupOnce.Do(func() { built, setupErr = build() })
	if setupErr != nil {
		t.Fatal(setupErr)
	}
	return built
}

func build() (*env, error) {
	dir, err := os.MkdirTemp("", "capi-test-")
	if err != nil {
		return nil, err
	}
	tmpRoot = dir
	e := &env{prefix: filepath.Join(dir, "prefix"), bin: map[string]string{}}
	if err := runCmd(exec.Command("make", "-s", "PREFIX="+e.prefix, "BUILD="+filepath.Join(dir, "build"), "install")); err != nil {
		return nil, fmt.Errorf("make install: %w", err)
	}
	pc := exec.Command("pkg-config", "--cflags", "--libs", "portals4")
	pc.Env = append(os.Environ(), "PKG_CONFIG_PATH="+filepath.Join(e.prefix, "lib", "pkgconfig"))
	flags, err := pc.Output()
	if err != nil {
		return nil, fmt.Errorf("pkg-config --cflags --libs portals4: %w", err)
	}
	for _, name := range cTests {
		out := filepath.Join(dir, name)
		args := []string{"-std=c11", "-O2", "-pthread", "-Wall", "-Wextra", "-Werror", filepath.Join("tests", name+".c"), "-o", out}
		if name == "ptl_ownpmi" {
			args = append(args, "-rdynamic") // its PMI_Init in the global scope, as a PMI library's
		}
		args = append(args, strings.Fields(string(flags))...)
		if err := runCmd(exec.Command("gcc", args...)); err != nil {
			return nil, fmt.Errorf("compiling %s: %w", name, err)
		}
		e.bin[name] = out
	}
	// Variants of ptl_ownpmi: its PMI client outside the global scope (a static
	// PMI library, linked without -rdynamic: only PTL_CAPI_PMI=program tells),
	// and an MPI (MPI_Init in the process, PMI_Init not exported, as MPICH's).
	for name, extra := range map[string][]string{
		"ptl_ownpmi_nordyn": nil,
		"ptl_ownpmi_mpi":    {"-rdynamic", "-DOWN_MPI"},
	} {
		out := filepath.Join(dir, name)
		args := []string{"-std=c11", "-O2", "-pthread", "-Wall", "-Wextra", "-Werror", filepath.Join("tests", "ptl_ownpmi.c"), "-o", out}
		args = append(append(args, extra...), strings.Fields(string(flags))...)
		if err := runCmd(exec.Command("gcc", args...)); err != nil {
			return nil, fmt.Errorf("compiling %s: %w", name, err)
		}
		e.bin[name] = out
	}
	e.ptlrun = filepath.Join(dir, "ptlrun")
	e.goLat = filepath.Join(dir, "putlat")
	for out, pkg := range map[string]string{e.ptlrun: "../cmd/ptlrun", e.goLat: "./bench/putlat"} {
		if err := runCmd(exec.Command("go", "build", "-o", out, pkg)); err != nil {
			return nil, fmt.Errorf("go build %s: %w", pkg, err)
		}
	}
	return e, nil
}

func runCmd(c *exec.Cmd) error {
	out, err := c.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%v: %w\n%s", c.Args, err, out)
	}
	return nil
}

// run starts prog (under ptlrun -np n when n > 0) and returns its output.
func (e *env) run(t *testing.T, n int, prog string, args ...string) (string, error) {
	return e.runEnv(t, nil, n, prog, args...)
}

// runEnv is run with extra environment variables.
func (e *env) runEnv(t *testing.T, extra []string, n int, prog string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var c *exec.Cmd
	if n > 0 {
		c = exec.CommandContext(ctx, e.ptlrun, append([]string{"-np", strconv.Itoa(n), "-timeout", "4m", prog}, args...)...)
	} else {
		c = exec.CommandContext(ctx, prog, args...)
	}
	c.Env = append(launcherFree(os.Environ()), extra...)
	out, err := c.CombinedOutput()
	return string(out), err
}

// launcherFree drops the variables a surrounding launcher may have set, so a
// program run without ptlrun starts as a process of its own.
func launcherFree(envv []string) []string {
	var out []string
	for _, kv := range envv {
		if strings.HasPrefix(kv, "PTL_RANK=") || strings.HasPrefix(kv, "PTL_SIZE=") ||
			strings.HasPrefix(kv, "PTL_BOOTSTRAP_ADDR=") || strings.HasPrefix(kv, "PTL_JOB_KEY=") ||
			strings.HasPrefix(kv, "PMI_") || strings.HasPrefix(kv, "OMPI_COMM_WORLD_") {
			continue
		}
		out = append(out, kv)
	}
	return out
}

var summaryRE = regexp.MustCompile(`(?m)^(?:\S+: )?(\d+) passed, (\d+) failed, (\d+) skipped$`)

// checkSummaries requires want closing lines, each with tests passed and none
// failed.
func checkSummaries(t *testing.T, out string, want int) {
	t.Helper()
	m := summaryRE.FindAllStringSubmatch(out, -1)
	if len(m) != want {
		t.Fatalf("want %d closing lines, found %d:\n%s", want, len(m), out)
	}
	for _, s := range m {
		if s[2] != "0" || s[1] == "0" {
			t.Errorf("closing line %q:\n%s", s[0], out)
		}
	}
}

// TestCLocal runs the one-process C tests with no launcher.
func TestCLocal(t *testing.T) {
	e := setup(t)
	out, err := e.run(t, 0, e.bin["ptl_local"])
	if err != nil {
		t.Fatalf("ptl_local: %v\n%s", err, out)
	}
	checkSummaries(t, out, 1)
}

// TestCWithoutGoLibrary: with PTL_GOLIB naming a missing file, PtlInit fails
// with PTL_FAIL and a message, and every call answers without crashing.
func TestCWithoutGoLibrary(t *testing.T) {
	e := setup(t)
	missing := filepath.Join(t.TempDir(), "no-such-libgoportals.so")
	out, err := e.runEnv(t, []string{"PTL_GOLIB=" + missing}, 0, e.bin["ptl_nogolib"])
	if err != nil {
		t.Fatalf("ptl_nogolib: %v\n%s", err, out)
	}
	checkSummaries(t, out, 1)
	if !strings.Contains(out, "cannot load the Go library") {
		t.Errorf("PtlInit did not say why it failed:\n%s", out)
	}
}

// TestCPair runs the two-rank C tests under ptlrun.
func TestCPair(t *testing.T) {
	e := setup(t)
	out, err := e.run(t, 2, e.bin["ptl_pair"])
	if err != nil {
		t.Fatalf("ptlrun -np 2 ptl_pair: %v\n%s", err, out)
	}
	checkSummaries(t, out, 2)
}

// TestCGOMAXPROCS1 runs the C tests with one P in each Go runtime: calls that
// wait must make progress themselves, not count on a scheduled goroutine.
func TestCGOMAXPROCS1(t *testing.T) {
	e := setup(t)
	one := []string{"GOMAXPROCS=1"}
	out, err := e.runEnv(t, one, 0, e.bin["ptl_local"])
	if err != nil {
		t.Fatalf("GOMAXPROCS=1 ptl_local: %v\n%s", err, out)
	}
	checkSummaries(t, out, 1)
	out, err = e.runEnv(t, one, 2, e.bin["ptl_pair"])
	if err != nil {
		t.Fatalf("GOMAXPROCS=1 ptlrun -np 2 ptl_pair: %v\n%s", err, out)
	}
	checkSummaries(t, out, 2)
}

// TestCCounterInPlace runs tests/ptl_ctspin.c: the shim answers PtlCTGet and
// satisfied counter waits from the counter's cell without entering Go, and a
// program that waits by spinning on PtlCTGet alone still completes its puts
// when nothing else drives the engine (one P, no progress goroutine), alone and
// in a two-rank ping-pong; and with the defaults.
func TestCCounterInPlace(t *testing.T) {
	e := setup(t)
	bare := []string{"GOMAXPROCS=1", "PTL_PROGRESS_GOROUTINE=0"}
	for _, c := range []struct {
		env []string
		n   int
	}{{bare, 0}, {bare, 2}, {nil, 2}} {
		out, err := e.runEnv(t, c.env, c.n, e.bin["ptl_ctspin"])
		if err != nil {
			t.Fatalf("%v ranks %d ptl_ctspin: %v\n%s", c.env, c.n, err, out)
		}
		checkSummaries(t, out, max(c.n, 1))
		for _, m := range regexp.MustCompile(`ctspin: .*`).FindAllString(out, -1) {
			t.Logf("%v ranks %d: %s", c.env, max(c.n, 1), m)
		}
	}
}

// TestCForkNoLauncher runs the program that forks before PtlInit and swaps
// physical ids through a pipe (see forkXFail).
func TestCForkNoLauncher(t *testing.T) {
	e := setup(t)
	out, err := e.run(t, 0, e.bin["ptl_fork"])
	m := summaryRE.FindAllStringSubmatch(out, -1)
	passed := err == nil && len(m) == 2 && m[0][2] == "0" && m[1][2] == "0"
	switch {
	case passed && forkXFail != "":
		t.Errorf("ptl_fork passes but is marked expected-to-fail (%s): clear forkXFail\n%s", forkXFail, out)
	case !passed && forkXFail != "":
		t.Skipf("expected failure: %s\n%s", forkXFail, out)
	case !passed:
		t.Errorf("ptl_fork: %v\n%s", err, out)
	}
}

// TestCPairCheckPFN runs the two-rank tests with the pin cache checking page
// frames on every hit (PTL_CHECK_PFN=1): the churn test then requires zero
// stale hits with frames verified, not only correct data.
func TestCPairCheckPFN(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("PTL_CHECK_PFN=1 reads page frame numbers from /proc/self/pagemap, which the kernel gives to root only")
	}
	e := setup(t)
	out, err := e.runEnv(t, []string{"PTL_CHECK_PFN=1"}, 2, e.bin["ptl_pair"])
	if err != nil {
		t.Fatalf("PTL_CHECK_PFN=1 ptlrun -np 2 ptl_pair: %v\n%s", err, out)
	}
	checkSummaries(t, out, 2)
	if m := regexp.MustCompile(`churn cache: .*`).FindString(out); m != "" {
		t.Log(m)
	}
}

// headerFunctions returns the functions include/portals4.h declares.
func headerFunctions(t *testing.T) []string {
	return declared(t, "portals4.h")
}

// declared returns the functions a header of include/ declares.
func declared(t *testing.T, header string) []string {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("include", header))
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`(?m)^(?:int|void|uint64_t)\s+((?:Ptl|goportals_)\w+)\(`)
	var names []string
	for _, m := range re.FindAllStringSubmatch(string(src), -1) {
		names = append(names, m[1])
	}
	sort.Strings(names)
	return names
}

// TestEveryFunctionCalled: portals4.h declares the 54 functions of the
// reference's header, and the C tests call each of them.
func TestEveryFunctionCalled(t *testing.T) {
	names := headerFunctions(t)
	if len(names) != 54 {
		t.Fatalf("portals4.h declares %d functions, want 54: %v", len(names), names)
	}
	var all strings.Builder
	files, err := filepath.Glob(filepath.Join("tests", "*.c"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no C tests: %v", err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		all.Write(b)
	}
	for _, n := range names {
		if !regexp.MustCompile(`\b` + n + `\(`).MatchString(all.String()) {
			t.Errorf("no C test calls %s", n)
		}
	}
}

// TestExports: the installed libportals.so.4 has its SONAME, exports exactly
// the functions of portals4.h and portals4_goportals.h, and the libportals.so
// link points to it.
func TestExports(t *testing.T) {
	e := setup(t)
	lib := filepath.Join(e.prefix, "lib", "libportals.so.4")
	f, err := elf.Open(lib)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sonames, err := f.DynString(elf.DT_SONAME)
	if err != nil || len(sonames) != 1 || sonames[0] != "libportals.so.4" {
		t.Errorf("SONAME %v (%v), want libportals.so.4", sonames, err)
	}
	syms, err := f.DynamicSymbols()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range syms {
		if s.Section != elf.SHN_UNDEF && elf.ST_TYPE(s.Info) == elf.STT_FUNC {
			got = append(got, s.Name)
		}
	}
	sort.Strings(got)
	want := append(headerFunctions(t), declared(t, "portals4_goportals.h")...)
	sort.Strings(want)
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("exported functions:\n%v\nwant:\n%v", got, want)
	}
	if dst, err := os.Readlink(filepath.Join(e.prefix, "lib", "libportals.so")); err != nil || dst != "libportals.so.4" {
		t.Errorf("libportals.so -> %q (%v), want libportals.so.4", dst, err)
	}
	for _, p := range []string{"include/portals4.h", "include/portals4_goportals.h", "lib/libgoportals.so",
		"lib/pkgconfig/portals4.pc"} {
		if _, err := os.Stat(filepath.Join(e.prefix, p)); err != nil {
			t.Errorf("not installed: %v", err)
		}
	}
}

var latRE = regexp.MustCompile(`putlat api=(\w+) bytes=8 iters=\d+ oneway_us=[0-9.]+ median_oneway_us=([0-9.]+)(?: go_calls_per_round_trip=([0-9.]+))?`)

// TestPutLatencyRatio runs the C and the Go put-latency benchmarks interleaved
// in one run (5 rounds, each round running both, the order alternating) and
// logs each round's ratio (C over Go) of the median one-way latencies, the
// median of those ratios and the calls into Go that one round trip costs the C
// program: the machine is shared, so only ratios of runs taken side by side
// mean anything, and a run's median round trip is what scheduling hiccups move
// least.
// It fails only when a benchmark does not run; the figures are for the report
// (PTL_CAPI_LAT_ITERS sets the iterations, default 5000; -short skips).
func TestPutLatencyRatio(t *testing.T) {
	if testing.Short() {
		t.Skip("a benchmark: skipped with -short")
	}
	e := setup(t)
	iters := "5000"
	if v := os.Getenv("PTL_CAPI_LAT_ITERS"); v != "" {
		iters = v
	}
	const rounds = 5
	ratios := make([]float64, rounds)
	calls := ""
	for round := range rounds {
		progs := []string{e.bin["ptl_putlat"], e.goLat}
		if round%2 == 1 {
			progs[0], progs[1] = progs[1], progs[0]
		}
		res := map[string]float64{}
		for _, prog := range progs {
			out, err := e.run(t, 2, prog, iters)
			if err != nil {
				t.Fatalf("%s: %v\n%s", filepath.Base(prog), err, out)
			}
			m := latRE.FindStringSubmatch(out)
			if m == nil {
				t.Fatalf("%s printed no result:\n%s", filepath.Base(prog), out)
			}
			v, err := strconv.ParseFloat(m[2], 64)
			if err != nil || v <= 0 {
				t.Fatalf("%s: latency %q", filepath.Base(prog), m[2])
			}
			res[m[1]] = v
			if m[3] != "" {
				calls = m[3]
			}
		}
		ratios[round] = res["c"] / res["go"]
		t.Logf("round %d: 8-byte put one-way latency (median) C ABI %.3f µs, Go API %.3f µs, ratio C/Go %.2f",
			round+1, res["c"], res["go"], ratios[round])
	}
	sorted := slices.Clone(ratios)
	sort.Float64s(sorted)
	t.Logf("median of %d per-round ratios C/Go: %.2f (ratios %.2f); calls into Go per C round trip: %s",
		rounds, sorted[rounds/2], ratios, calls)
}

var callRE = regexp.MustCompile(`callcost api=c ctget_ns=([0-9.]+) eqget_ns=([0-9.]+)`)

// TestCallCostRatio measures one PtlCTGet of an unchanged counter (a poll: the
// shim runs a progress round in Go) and one PtlEQGet on an empty queue through
// the C ABI (tests/ptl_callcost.c), and the same calls through portals/ptl in
// this process, fastest of 5 batches each, and logs the costs and ratios: the
// difference is the cost of entering Go from C. It fails only when a
// measurement does not run.
func TestCallCostRatio(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("a benchmark: skipped with -short and under -race")
	}
	e := setup(t)
	out, err := e.run(t, 0, e.bin["ptl_callcost"])
	if err != nil {
		t.Fatalf("ptl_callcost: %v\n%s", err, out)
	}
	m := callRE.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("ptl_callcost printed no result:\n%s", out)
	}
	cCT, _ := strconv.ParseFloat(m[1], 64)
	cEQ, _ := strconv.ParseFloat(m[2], 64)

	if err := ptl.Init(); err != nil {
		t.Fatal(err)
	}
	defer ptl.Fini()
	ni, _, err := ptl.NIInit(portals.IfaceDefault, portals.NIMatching|portals.NILogical, portals.PIDAny, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ni.Fini()
	ct, err := ptl.CTAlloc(ni)
	if err != nil {
		t.Fatal(err)
	}
	q, err := ptl.EQAlloc(ni, 16)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ptl.EQGet(q); portals.ErrnoOf(err) != portals.EQEmpty {
		t.Fatalf("EQGet on an empty queue: %v", err)
	}
	const n = 200000
	goCT, goEQ := math.Inf(1), math.Inf(1)
	for b := 0; b < 5; b++ {
		t0 := time.Now()
		for i := 0; i < n; i++ {
			if _, err := ptl.CTGet(ct); err != nil {
				t.Fatal(err)
			}
		}
		t1 := time.Now()
		for i := 0; i < n; i++ {
			if _, err := ptl.EQGet(q); err == nil { // EQEmpty, checked once below
				t.Fatal("EQGet on an empty queue returned an event")
			}
		}
		t2 := time.Now()
		goCT = min(goCT, float64(t1.Sub(t0).Nanoseconds())/n)
		goEQ = min(goEQ, float64(t2.Sub(t1).Nanoseconds())/n)
	}
	t.Logf("one call, fastest of 5 batches of %d: PtlCTGet unchanged C ABI %.1f ns, Go %.1f ns (ratio %.2f); "+
		"PtlEQGet empty C ABI %.1f ns, Go %.1f ns (ratio %.2f)", n, cCT, goCT, cCT/goCT, cEQ, goEQ, cEQ/goEQ)
}

// TestReadmeLimits: the README documents the limits of a Go c-shared library.
func TestReadmeLimits(t *testing.T) {
	f, err := os.Open("README.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var text strings.Builder
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		text.WriteString(strings.ToLower(sc.Text()) + "\n")
	}
	for _, topic := range []string{"one go runtime", "fork", "signal", "raw-address"} {
		if !strings.Contains(text.String(), topic) {
			t.Errorf("README.md says nothing about %q", topic)
		}
	}
}

// TestCPairHydra runs the two-rank C tests under MPICH's mpiexec.hydra: the
// library finds its peers through hydra's PMI, as the C clients that bring
// their own launcher do.
func TestCPairHydra(t *testing.T) {
	hydra, err := exec.LookPath("mpiexec.hydra")
	if err != nil {
		t.Skip("mpiexec.hydra not installed (Debian package mpich)")
	}
	e := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c := exec.CommandContext(ctx, hydra, "-n", "2", e.bin["ptl_pair"])
	c.Env = launcherFree(os.Environ())
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("mpiexec.hydra -n 2 ptl_pair: %v\n%s", err, out)
	}
	checkSummaries(t, string(out), 2)
}

// TestCOwnPMIHydra runs tests/ptl_ownpmi.c, a program with a PMI client of its
// own, under mpiexec.hydra: PtlInit leaves hydra's one PMI connection per rank
// to the program (the library starts as a lone process) and the PMI variables
// are still set afterwards. Without this, Sandia OpenSHMEM's start failed.
func TestCOwnPMIHydra(t *testing.T) {
	hydra, err := exec.LookPath("mpiexec.hydra")
	if err != nil {
		t.Skip("mpiexec.hydra not installed (Debian package mpich)")
	}
	e := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for _, run := range []struct {
		prog string
		env  []string
	}{
		{"ptl_ownpmi", nil},
		{"ptl_ownpmi_mpi", nil},
		{"ptl_ownpmi_nordyn", []string{"PTL_CAPI_PMI=program"}},
	} {
		c := exec.CommandContext(ctx, hydra, "-n", "2", e.bin[run.prog])
		c.Env = append(launcherFree(os.Environ()), run.env...)
		out, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("%v mpiexec.hydra -n 2 %s: %v\n%s", run.env, run.prog, err, out)
		}
		checkSummaries(t, string(out), 2)
	}
}

// sosTests are the Sandia OpenSHMEM unit tests (of its tests-sos module) that
// sos/build.sh compiles and TestSOSHydra runs, with what a passing run prints
// (a regular expression; empty: only the exit status counts).
var sosTests = []struct{ name, want string }{
	{"hello", `(?s)Hello World from [01] of 2.*Hello World from [01] of 2`},
	{"barrier", ""},
	{"repeated_barriers", ""},
	{"put1", ""},
	{"put_nbi", ""},
	{"get1", ""},
	{"bigput", ""},
	{"atomic_inc", `2 ranks completed`},
	{"fadd_nbi", ""},
	{"cswap", ""},
	{"lfinc", ""},
	{"ping", ""},
	{"pingpong", ""},
	{"collect", ""},
	{"max_reduction", ""},
	{"reduce_in_place", ""},
	{"shmem_ptr", ""},
	// Reductions cut into pieces of max_atomic_size bytes: the limit must hold
	// whole elements (see golib's wholeElements).
	{"to_all", ""},
	{"big_reduction", ""},
}

// TestSOSHydra runs unit tests of Sandia OpenSHMEM, a real Portals 4 client,
// under mpiexec.hydra -n 2 with the libportals.so.4 this run built. SOS is not
// built here (that takes minutes): capi/sos/build.sh OUT builds it over this ABI
// with its own PMI-1 client (--enable-pmi-simple) and compiles the tests, and
// GOPORTALS_SOS_DIR=OUT points the test at them.
func TestSOSHydra(t *testing.T) {
	dir := os.Getenv("GOPORTALS_SOS_DIR")
	if dir == "" {
		t.Skip("no prebuilt Sandia OpenSHMEM: build one with capi/sos/build.sh OUT (a few minutes) and set GOPORTALS_SOS_DIR=OUT")
	}
	hydra, err := exec.LookPath("mpiexec.hydra")
	if err != nil {
		t.Skip("mpiexec.hydra not installed (Debian package mpich)")
	}
	e := setup(t)
	lib := filepath.Join(e.prefix, "lib")
	for _, st := range sosTests {
		bin := filepath.Join(dir, "tests", st.name)
		if _, err := os.Stat(bin); err != nil {
			t.Fatalf("GOPORTALS_SOS_DIR=%s lacks a test (rerun capi/sos/build.sh): %v", dir, err)
		}
	}
	// The programs must load this run's library, not the one SOS was built with.
	ld := exec.Command(filepath.Join(dir, "tests", sosTests[0].name))
	ld.Env = append(os.Environ(), "LD_LIBRARY_PATH="+lib, "LD_TRACE_LOADED_OBJECTS=1")
	out, err := ld.Output()
	if err != nil || !strings.Contains(string(out), filepath.Join(lib, "libportals.so.4")) {
		t.Fatalf("the SOS tests do not load %s/libportals.so.4 (%v):\n%s", lib, err, out)
	}
	for _, st := range sosTests {
		t.Run(st.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			c := exec.CommandContext(ctx, hydra, "-n", "2", filepath.Join(dir, "tests", st.name))
			c.Env = append(launcherFree(os.Environ()), "LD_LIBRARY_PATH="+lib)
			out, err := c.CombinedOutput()
			if err != nil {
				t.Fatalf("mpiexec.hydra -n 2 %s: %v\n%s", st.name, err, out)
			}
			if st.want != "" && !regexp.MustCompile(st.want).Match(out) {
				t.Errorf("%s printed no %q:\n%s", st.name, st.want, out)
			}
		})
	}
}
