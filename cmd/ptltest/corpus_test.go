package main

import (
	"bufio"
	"encoding/xml"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/goportals/goportals/internal/netnstest"
	"github.com/goportals/goportals/tests"
)

// The conformance ratchet: TestCorpus runs the whole Portals 4 conformance corpus
// through ptltest and compares the tests that pass, by name, with passListFile, the
// committed list of the tests expected to pass. An expected test that no longer
// passes fails TestCorpus with its name and reason; so does a test that passes and is
// not on the list (naming it and how to add it), so the list rises with every engine
// fix and never lags behind what passes.
const (
	// passListFile lists the corpus tests expected to pass, one name (as ptltest
	// prints it) a line, sorted; lines starting with # are comments.
	passListFile = "testdata/conformance-passes.txt"

	// envConformance controls TestCorpus: "skip" runs without the corpus (TestCorpus
	// skips, saying so), "update" rewrites passListFile with the tests that pass.
	// Unset, TestCorpus fails when the corpus is absent.
	envConformance = "PTL_CONFORMANCE"

	updateHint = envConformance + "=update go test -run TestCorpus ./cmd/ptltest"

	// maxRetries bounds the failed expected tests TestCorpus and TestCorpusAcrossNodes run once more (a
	// timing-sensitive test may fail under load); past it, they are regressions
	// without a second run.
	maxRetries = 10
)

// corpusDir is where the corpus is looked for: the folder shared/conformance/portals4-sfw
// beside the checkout's top folder, relative to this package's folder (a test's working
// directory).
var corpusDir = filepath.Join("..", "..", "..", "shared", "conformance", "portals4-sfw")

// corpusGate decides whether TestCorpus runs on dir: it returns a reason to skip
// when mode opts out, and an error when the corpus is absent and mode does not opt
// out, or when mode is not a value envConformance takes.
func corpusGate(dir, mode string) (skip string, err error) {
	switch mode {
	case "", "update":
	case "skip":
		return fmt.Sprintf("%s=skip: the conformance corpus is not run", envConformance), nil
	default:
		return "", fmt.Errorf("%s=%q: want skip, update or unset", envConformance, mode)
	}
	abs, aerr := filepath.Abs(dir)
	if aerr != nil {
		abs = dir
	}
	st, serr := os.Stat(dir)
	if serr == nil && !st.IsDir() {
		serr = fmt.Errorf("not a folder")
	}
	if serr != nil {
		return "", fmt.Errorf("the conformance corpus is not at %s (%v): put it there, or set %s=skip to run without it",
			abs, serr, envConformance)
	}
	return "", nil
}

// readPassList reads a list of test names: one a line, blank lines and # comments
// ignored. It refuses a list that is not sorted or repeats a name, so that the file
// stays reviewable.
func readPassList(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var names []string
	sc := bufio.NewScanner(f)
	line := 0
	for sc.Scan() {
		line++
		s := strings.TrimSpace(sc.Text())
		if s == "" || strings.HasPrefix(s, "#") {
			continue
		}
		if n := len(names); n > 0 && s <= names[n-1] {
			return nil, fmt.Errorf("%s:%d: %q is out of order or repeated (the list is sorted, one name a line)", path, line, s)
		}
		names = append(names, s)
	}
	return names, sc.Err()
}

// writePassList writes names (sorted) as a pass list with its header.
func writePassList(path string, names []string) error {
	names = append([]string(nil), names...)
	sort.Strings(names)
	var b strings.Builder
	b.WriteString("# Portals 4 conformance corpus tests expected to pass (TestCorpus), one name a line, sorted.\n")
	b.WriteString("# A test that passed and now fails fails TestCorpus. Regenerate after an engine fix:\n")
	b.WriteString("#   " + updateHint + "\n")
	for _, n := range names {
		b.WriteString(n + "\n")
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// diffPasses compares the tests that passed with those expected to pass, by name:
// lost are expected but did not pass, gained passed but are not expected. Both are
// sorted.
func diffPasses(expected, passed []string) (lost, gained []string) {
	in := func(list []string) map[string]bool {
		m := make(map[string]bool, len(list))
		for _, n := range list {
			m[n] = true
		}
		return m
	}
	exp, got := in(expected), in(passed)
	for n := range exp {
		if !got[n] {
			lost = append(lost, n)
		}
	}
	for n := range got {
		if !exp[n] {
			gained = append(gained, n)
		}
	}
	sort.Strings(lost)
	sort.Strings(gained)
	return lost, gained
}

// corpusRun is one ptltest run's outcome per test name.
type corpusRun struct {
	status map[string]tests.Status
	reason map[string]string
}

func (c corpusRun) passed() []string {
	var names []string
	for n, st := range c.status {
		if st == tests.Pass {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names
}

// runCorpus runs ptltest on paths and returns the outcome of each test, named as
// relative to dir. It fails the test when ptltest's exit status, closing line and
// report do not agree.
func runCorpus(t *testing.T, dir string, args ...string) corpusRun {
	t.Helper()
	junit := filepath.Join(t.TempDir(), "report.xml")
	code, out, errOut := runCLI(t, append([]string{"-junit", junit}, args...)...)
	if code != 0 && code != 1 {
		t.Fatalf("ptltest %v: exit status %d (want 0, or 1 for failed tests)\n%s%s", args, code, out, errOut)
	}
	p, f, s := counts(t, out)
	if (code == 1) != (f > 0) {
		t.Errorf("ptltest %v: exit status %d with %d failed tests", args, code, f)
	}
	data, err := os.ReadFile(junit)
	if err != nil {
		t.Fatalf("ptltest wrote no JUnit report: %v\n%s", err, errOut)
	}
	var rep junitSuites
	if err := xml.Unmarshal(data, &rep); err != nil || len(rep.Suites) != 1 {
		t.Fatalf("the JUnit report does not parse (%v)", err)
	}
	run := corpusRun{status: map[string]tests.Status{}, reason: map[string]string{}}
	var np, nf, ns int
	for _, c := range rep.Suites[0].Cases {
		name := c.Name // relative to dir for a folder, the path as given for a file
		if rel, ok := strings.CutPrefix(name, dir+string(filepath.Separator)); ok {
			name = rel
		}
		name = filepath.ToSlash(name)
		st := tests.Pass
		switch {
		case c.Failure != nil:
			st, nf = tests.Fail, nf+1
			run.reason[name] = c.Failure.Message
		case c.Skipped != nil:
			st, ns = tests.Skip, ns+1
			run.reason[name] = "skipped: " + c.Skipped.Message
		default:
			np++
		}
		if _, dup := run.status[name]; dup {
			t.Errorf("ptltest reported %s twice", name)
		}
		run.status[name] = st
	}
	if np != p || nf != f || ns != s {
		t.Errorf("the closing line says %d/%d/%d passed/failed/skipped, the report %d/%d/%d", p, f, s, np, nf, ns)
	}
	return run
}

// TestCorpus runs the whole Portals 4 conformance corpus through ptltest (-j 2) and
// compares the passing tests with passListFile by name (see the ratchet above).
func TestCorpus(t *testing.T) {
	if testing.Short() {
		t.Skip("the conformance corpus takes about 20 s; skipped with -short")
	}
	mode := os.Getenv(envConformance)
	skip, err := corpusGate(corpusDir, mode)
	if err != nil {
		t.Fatal(err)
	}
	if skip != "" {
		t.Skip(skip)
	}
	var expected []string
	if mode != "update" {
		if expected, err = readPassList(passListFile); err != nil {
			t.Fatalf("the list of expected passes: %v (write it with %s)", err, updateHint)
		}
	}
	if raceEnabled {
		// Race-built ranks make the corpus take over 6 minutes of the CI budget; the
		// ranks run from a plain build of ptltest instead (the engine's own tests
		// cover races).
		exe := buildPlain(t)
		defer func(f func() (string, error)) { rankProgram = f }(rankProgram)
		rankProgram = func() (string, error) { return exe, nil }
	}
	dir := corpusDir
	cases, err := tests.Discover([]string{dir}, 0)
	if err != nil {
		t.Fatal(err)
	}
	run := runCorpus(t, dir, "-j", "2", "-timeout", "20s", dir)
	if len(run.status) != len(cases) {
		t.Errorf("%d results for %d scripts", len(run.status), len(cases))
	}
	passed := run.passed()
	fmt.Fprintf(os.Stderr, "ptltest corpus pass rate: %.1f%% (%d of %d)\n",
		100*float64(len(passed))/float64(len(cases)), len(passed), len(cases))

	if mode == "update" {
		old, err := readPassList(passListFile)
		if err != nil {
			t.Logf("the old list: %v", err)
		}
		lost, gained := diffPasses(old, passed)
		if err := writePassList(passListFile, passed); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s: %d tests expected to pass, %d added, %d removed %v; review and commit it",
			passListFile, len(passed), len(gained), len(lost), lost)
		return
	}

	lost, gained := diffPasses(expected, passed)
	regressions := retryLost(t, dir, run, lost, "-timeout", "20s")
	if len(regressions) > 0 {
		t.Errorf("%d tests expected to pass (%s) no longer pass:\n%s\n"+
			"Fix the regression; if a test is meant to fail now, rewrite the list with %s and commit it.",
			len(regressions), passListFile, strings.Join(regressions, "\n"), updateHint)
	}
	if len(gained) > 0 {
		// A failure, not a note: go test hides a passing package's output, so a new
		// pass only reported would never reach the list.
		t.Errorf("%d tests pass that %s does not list:\n%s\nAdd them: run %s, then commit %s.",
			len(gained), passListFile, strings.Join(gained, "\n"), updateHint, passListFile)
	}
}

// buildPlain builds ptltest without the race detector and returns the binary.
func buildPlain(t *testing.T) string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("no go command to build a plain ptltest for the race run: %v", err)
	}
	exe := filepath.Join(t.TempDir(), "ptltest")
	cmd := exec.Command(gobin, "build", "-o", exe, ".")
	cmd.Env = append(os.Environ(), "GOFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return exe
}

// TestDiffPassesByName: the ratchet compares names, so four regressions cannot hide
// behind four new passes.
func TestDiffPassesByName(t *testing.T) {
	expected := []string{"a.xml", "b.xml", "c.xml", "d.xml", "e.xml"}
	passed := []string{"e.xml", "a.xml", "f.xml", "g.xml", "h.xml", "i.xml"} // more passes than expected
	lost, gained := diffPasses(expected, passed)
	if strings.Join(lost, " ") != "b.xml c.xml d.xml" || strings.Join(gained, " ") != "f.xml g.xml h.xml i.xml" {
		t.Errorf("diffPasses: lost %v gained %v", lost, gained)
	}
	if lost, gained := diffPasses(expected, expected); lost != nil || gained != nil {
		t.Errorf("the same lists: lost %v gained %v", lost, gained)
	}
}

// TestCorpusGate: without the corpus TestCorpus fails, saying where it looked,
// unless PTL_CONFORMANCE=skip opts out.
func TestCorpusGate(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-corpus")
	abs, _ := filepath.Abs(missing)
	for _, mode := range []string{"", "update"} {
		skip, err := corpusGate(missing, mode)
		if err == nil || skip != "" || !strings.Contains(err.Error(), abs) || !strings.Contains(err.Error(), envConformance+"=skip") {
			t.Errorf("mode %q without the corpus: skip %q err %v; want an error naming %s and the opt-out", mode, skip, err, abs)
		}
	}
	if skip, err := corpusGate(missing, "skip"); err != nil || !strings.Contains(skip, envConformance+"=skip") {
		t.Errorf("opted out: skip %q err %v", skip, err)
	}
	if _, err := corpusGate(t.TempDir(), "yes"); err == nil {
		t.Errorf("%s=yes was accepted", envConformance)
	}
	if skip, err := corpusGate(t.TempDir(), ""); err != nil || skip != "" {
		t.Errorf("a corpus folder: skip %q err %v", skip, err)
	}
}

// TestPassList: the committed list is sorted, without repeats, of corpus test names;
// the list format round-trips and an unsorted list is refused.
func TestPassList(t *testing.T) {
	names, err := readPassList(passListFile)
	if err != nil {
		t.Fatal(err)
	}
	if len(names) == 0 {
		t.Fatalf("%s lists no test", passListFile)
	}
	for _, n := range names {
		if !strings.HasSuffix(n, ".xml") || strings.Contains(n, " ") || filepath.IsAbs(n) {
			t.Errorf("%s: %q is not a test name", passListFile, n)
		}
	}
	path := filepath.Join(t.TempDir(), "list.txt")
	if err := writePassList(path, []string{"b.xml", "a.xml"}); err != nil {
		t.Fatal(err)
	}
	if got, err := readPassList(path); err != nil || strings.Join(got, " ") != "a.xml b.xml" {
		t.Errorf("round trip: %v %v", got, err)
	}
	if err := os.WriteFile(path, []byte("b.xml\na.xml\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readPassList(path); err == nil {
		t.Error("an unsorted list was accepted")
	}
}

// TestCorpusAcrossNodes runs the corpus's two-rank tests with the ranks in two
// network namespaces joined by veth: two nodes, so every queue pair takes the soft
// provider's TCP path. Every two-rank test on the pass list must pass.
func TestCorpusAcrossNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("the two-rank corpus across namespaces takes about 20 s; skipped with -short")
	}
	mode := os.Getenv(envConformance)
	skip, err := corpusGate(corpusDir, mode)
	if err != nil {
		t.Fatal(err)
	}
	if skip != "" || mode == "update" {
		t.Skip("only TestCorpus runs with " + envConformance + "=" + mode)
	}
	pair := netnstest.Setup(t)
	expected, err := readPassList(passListFile)
	if err != nil {
		t.Fatal(err)
	}
	if raceEnabled {
		exe := buildPlain(t)
		defer func(f func() (string, error)) { rankProgram = f }(rankProgram)
		rankProgram = func() (string, error) { return exe, nil }
	}
	dir := corpusDir
	sub := filepath.Join(dir, "test_n2")
	run := runCorpus(t, sub, "-j", "2", "-timeout", "30s", "-netns", pair.Names[0]+","+pair.Names[1], sub)
	var want []string
	for _, n := range expected {
		if rest, ok := strings.CutPrefix(n, "test_n2/"); ok {
			want = append(want, rest)
		}
	}
	if len(want) == 0 {
		t.Fatal("the pass list holds no two-rank test")
	}
	lost, _ := diffPasses(want, run.passed())
	for _, n := range retryLost(t, sub, run, lost, "-timeout", "30s", "-netns", pair.Names[0]+","+pair.Names[1]) {
		t.Errorf("test_n2/%s passes on one node but not across two", n)
	}
	t.Logf("%d two-rank tests passed across two network namespaces", len(run.passed()))
}

// retryLost returns the tests of lost (names relative to dir, expected to pass
// but failed in run) that fail again when run once more, one at a time, with
// the extra ptltest flags args. Some scripts are timing-bound (a 10 ms sleep
// before a check, a 200 ms event-queue poll) and fail on a loaded host; up to
// maxRetries of them get the second run before they count as regressions.
func retryLost(t *testing.T, dir string, run corpusRun, lost []string, args ...string) []string {
	t.Helper()
	var regressions []string
	if len(lost) == 0 {
		return nil
	}
	var paths []string
	for _, n := range lost {
		if _, ok := run.status[n]; ok {
			paths = append(paths, filepath.Join(dir, filepath.FromSlash(n)))
		}
	}
	again := corpusRun{status: map[string]tests.Status{}}
	if len(paths) > 0 && len(paths) <= maxRetries {
		again = runCorpus(t, dir, append(append([]string{"-j", "1"}, args...), paths...)...)
	}
	for _, n := range lost {
		_, ran := run.status[n]
		st, retried := again.status[n]
		switch {
		case !ran:
			regressions = append(regressions, n+" (not in the corpus)")
		case retried && st == tests.Pass:
			t.Logf("FLAKY %s: failed (%s), then passed when run again", n, run.reason[n])
			fmt.Fprintf(os.Stderr, "ptltest corpus: FLAKY %s failed, then passed when run again\n", n)
		default:
			regressions = append(regressions, fmt.Sprintf("%s (%s)", n, run.reason[n]))
		}
	}
	return regressions
}
