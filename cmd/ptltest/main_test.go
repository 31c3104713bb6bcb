package main

import (
	"bytes"
	"context"
	"encoding/xml"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/goportals/goportals/tests"
)

// TestMain lets this test binary serve as ptltest's rank program: run() starts
// os.Executable() — the test binary — for each rank, which lands here.
func TestMain(m *testing.M) {
	if tests.IsChild() {
		os.Exit(tests.ChildMain(os.Stdout))
	}
	os.Exit(m.Run())
}

func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

var summary = regexp.MustCompile(`(?m)^(\d+) passed, (\d+) failed, (\d+) skipped$`)

func counts(t *testing.T, out string) (pass, fail, skip int) {
	t.Helper()
	m := summary.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no closing line in:\n%s", out)
	}
	pass, _ = strconv.Atoi(m[1])
	fail, _ = strconv.Atoi(m[2])
	skip, _ = strconv.Atoi(m[3])
	return
}

func TestMixedFolder(t *testing.T) {
	junit := filepath.Join(t.TempDir(), "report.xml")
	code, out, errOut := runCLI(t, "-j", "2", "-junit", junit, "testdata/mixed")
	if code != 1 {
		t.Errorf("exit status %d, want 1 (a test failed); stderr: %s", code, errOut)
	}
	for _, want := range []string{
		"FAIL broken.xml (testdata/mixed/broken.xml:5: unknown element <ptl_teleport>)",
		"FAIL fail.xml (testdata/mixed/fail.xml: line 7: <check>: md_data=0x02",
		"PASS pass.xml\n",
		"SKIP skip.xml (testdata/mixed/skip.xml: line 5: pointer argument",
		"PASS test_n2/pingpong.xml\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if p, f, s := counts(t, out); p != 2 || f != 2 || s != 1 {
		t.Errorf("counts %d/%d/%d, want 2 passed 2 failed 1 skipped", p, f, s)
	}
	data, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	var rep junitSuites
	if err := xml.Unmarshal(data, &rep); err != nil {
		t.Fatalf("JUnit report does not parse: %v", err)
	}
	if s := rep.Suites[0]; s.Tests != 5 || s.Failures != 2 || s.Skipped != 1 || len(s.Cases) != 5 {
		t.Errorf("JUnit suite %+v", s)
	}
}

func TestProcessCountOverride(t *testing.T) {
	// The two-rank script run on one rank: rank 1's branch never runs and rank 0's put
	// goes to a rank that does not exist, which the API refuses.
	code, out, _ := runCLI(t, "-np", "1", "testdata/mixed/test_n2/pingpong.xml")
	if code != 1 || !strings.Contains(out, "FAIL") {
		t.Errorf("-np 1 on a two-rank script: status %d\n%s", code, out)
	}
}

func TestHangIsFailure(t *testing.T) {
	start := time.Now()
	code, out, _ := runCLI(t, "-timeout", "2s", "testdata/hang")
	if code != 1 || !strings.Contains(out, "FAIL hang.xml") {
		t.Errorf("a hanging test: status %d\n%s", code, out)
	}
	if d := time.Since(start); d > time.Minute {
		t.Errorf("a 2 s timeout took %v", d)
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{{}, {"-j", "0", "x"}, {"-np", "-1", "x"}, {"-timeout", "0s", "x"},
		{"no/such/path"}, {"-bogus"}} {
		if code, _, _ := runCLI(t, args...); code != 2 {
			t.Errorf("ptltest %v: status %d, want 2", args, code)
		}
	}
}

// corpusMinPass is the ratchet of TestCorpus: the number of corpus tests that must
// pass. It is set from the measured count — 820 of 823 on 2026-12-02: the other 3 are
// broken scripts (atom_op="XOR", type="UINIT" twice), which the runner fails by
// design — less a margin of 4 for the tests that sleep 10 ms and then check
// (timing-sensitive even in the reference implementation). Raise it with every
// engine fix, so CI proves progress and catches regressions.
const corpusMinPass = 816

// TestCorpus runs the whole Portals 4 conformance corpus through ptltest (-j 2) and
// fails when fewer than corpusMinPass tests pass.
func TestCorpus(t *testing.T) {
	if testing.Short() {
		t.Skip("the conformance corpus takes about 20 s; skipped with -short")
	}
	if raceEnabled {
		// Race-built ranks make the corpus take over 6 minutes of the CI budget; the
		// ranks run from a plain build of ptltest instead (the engine's own tests
		// cover races).
		exe := buildPlain(t)
		defer func(f func() (string, error)) { rankProgram = f }(rankProgram)
		rankProgram = func() (string, error) { return exe, nil }
	}
	dir := filepath.Join("..", "..", "..", "shared", "conformance", "portals4-sfw")
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("corpus not found at %s: %v", dir, err)
	}
	cases, err := tests.Discover([]string{dir}, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, out, errOut := runCLI(t, "-j", "2", "-timeout", "20s", dir)
	p, f, s := counts(t, out)
	t.Logf("corpus: %d passed, %d failed, %d skipped of %d", p, f, s, len(cases))
	if p+f+s != len(cases) {
		t.Errorf("%d results for %d scripts", p+f+s, len(cases))
	}
	if p < corpusMinPass {
		var failed []string
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, "FAIL ") {
				failed = append(failed, l)
			}
		}
		t.Errorf("%d tests passed, below the ratchet of %d. Failures:\n%s\n%s", p, corpusMinPass,
			strings.Join(failed, "\n"), errOut)
	}
	fmt.Fprintf(os.Stderr, "ptltest corpus pass rate: %.1f%%\n", 100*float64(p)/float64(len(cases)))
}

// buildPlain builds ptltest without the race detector and returns the binary.
func buildPlain(t *testing.T) string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command to build a plain ptltest for the race run: %v", err)
	}
	exe := filepath.Join(t.TempDir(), "ptltest")
	cmd := exec.Command(gobin, "build", "-o", exe, ".")
	cmd.Env = append(os.Environ(), "GOFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return exe
}
