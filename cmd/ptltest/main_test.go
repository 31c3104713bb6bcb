package main

import (
	"bytes"
	"context"
	"encoding/xml"
	"os"
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

// TestRefusals: a path that holds no test and a process count below 1 are usage
// errors (status 2) with a message that names them.
func TestRefusals(t *testing.T) {
	empty := t.TempDir()
	notes := t.TempDir()
	if err := os.WriteFile(filepath.Join(notes, "notes.txt"), []byte("no test here"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-np", "0", "testdata/mixed"}, "-np 0: want at least 1"},
		{[]string{"-np", "-3", "testdata/mixed/pass.xml"}, "-np -3: want at least 1"},
		{[]string{empty}, empty + " holds no test"},
		{[]string{notes}, notes + " holds no test"},
		{[]string{"testdata/mixed/pass.xml", empty}, empty + " holds no test"},
	} {
		code, out, errOut := runCLI(t, c.args...)
		if code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("ptltest %v: status %d, stderr %q; want 2 and a message containing %q\n%s", c.args, code, errOut, c.want, out)
		}
		if strings.Contains(out, "passed") {
			t.Errorf("ptltest %v ran tests:\n%s", c.args, out)
		}
	}
}

// TestUnknownSymbols: an unknown symbol reads as the reference reads it (strtol),
// with a WARN line naming file, line and word before the result; -strict fails the
// test instead.
func TestUnknownSymbols(t *testing.T) {
	warn := `WARN testdata/symbols/unknown.xml:7: unknown symbol type="UINIT", read as 0`
	warn2 := `WARN testdata/symbols/unknown.xml:8: unknown symbol ret="PERHAPS", read as 0`
	junit := filepath.Join(t.TempDir(), "report.xml")
	code, out, errOut := runCLI(t, "-junit", junit, "testdata/symbols")
	if data, err := os.ReadFile(junit); err != nil || !strings.Contains(string(data), "<system-out>"+strings.ReplaceAll(warn, `"`, "&#34;")) {
		t.Errorf("the JUnit report lacks the warning in system-out (%v):\n%s", err, data)
	}
	if code != 0 || !strings.Contains(out, warn) || !strings.Contains(out, warn2) || !strings.Contains(out, "\nPASS unknown.xml\n") {
		t.Errorf("without -strict: status %d, want 0, a pass and two warnings:\n%s%s", code, out, errOut)
	}
	if strings.Index(out, warn2) > strings.Index(out, "PASS unknown.xml") {
		t.Errorf("the warnings do not come before the result line:\n%s", out)
	}
	code, out, errOut = runCLI(t, "-strict", "testdata/symbols")
	if code != 1 || !strings.Contains(out, warn) ||
		!strings.Contains(out, `FAIL unknown.xml (testdata/symbols/unknown.xml:7: unknown symbol type="UINIT"`) {
		t.Errorf("with -strict: status %d, want 1 and a failure naming the symbol:\n%s%s", code, out, errOut)
	}
}
