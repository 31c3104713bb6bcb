package tests

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/goportals/goportals/internal/bootstrap"
)

func TestProcessCount(t *testing.T) {
	for path, want := range map[string]int{
		"/x/test_n2/a.xml":          2,
		"/x/test_n2/sub/a.xml":      2,
		"/x/test_n16/test_n2/a.xml": 2,
		"/x/test_n3x/a.xml":         1,
		"/x/a.xml":                  1,
		"test_n4/b.xml":             4,
		"/x/test_n0/a.xml":          1,
	} {
		if got := ProcessCount(path); got != want {
			t.Errorf("ProcessCount(%q) = %d, want %d", path, got, want)
		}
	}
}

func TestDiscover(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"b.xml", "a.xml", "notes.txt", "test_n2/c.xml", "deep/er/d.xml"} {
		p := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("<test/>"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cases, err := Discover([]string{dir, filepath.Join(dir, "a.xml")}, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range cases {
		got = append(got, c.Name+"/"+string(rune('0'+c.NP)))
	}
	want := "a.xml/1 b.xml/1 deep/er/d.xml/1 test_n2/c.xml/2 " + filepath.Join(dir, "a.xml") + "/1"
	if strings.Join(got, " ") != want {
		t.Errorf("Discover = %v, want %s", got, want)
	}
	cases, err = Discover([]string{dir}, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) == 0 {
		t.Fatal("Discover with -np 3 found no cases")
	}
	for _, c := range cases {
		if c.NP != 3 {
			t.Errorf("%s: NP %d with -np 3", c.Name, c.NP)
		}
	}
	if _, err := Discover([]string{filepath.Join(dir, "missing")}, 0); err == nil {
		t.Error("a missing path was accepted")
	}
}

func TestCombine(t *testing.T) {
	two := Case{Path: "x/test_n2/t.xml", NP: 2}
	timeout := &bootstrap.JobError{Rank: -1, Err: bootstrap.ErrTimeout}
	for _, c := range []struct {
		name   string
		ranks  []rankResult
		jobErr error
		want   Status
		reason string
	}{
		{"all pass", []rankResult{{Rank: 0}, {Rank: 1}}, nil, Pass, ""},
		{"one skip", []rankResult{{Rank: 0}, {Rank: 1, Status: Skip, Reason: "why"}}, nil, Skip, "rank 1: why"},
		{"own failure before peer loss", []rankResult{{Rank: 0, Status: Fail, Reason: "barrier lost", Peer: true},
			{Rank: 1, Status: Fail, Reason: "line 9: check"}}, errors.New("rank failed"), Fail, "rank 1: line 9: check"},
		{"peer loss only", []rankResult{{Rank: 0, Status: Fail, Reason: "barrier lost", Peer: true}}, errors.New("rank failed"),
			Fail, "rank 0: barrier lost"},
		{"timeout", []rankResult{{Rank: 0}}, timeout, Fail, "timed out"},
		{"missing rank", []rankResult{{Rank: 0}}, nil, Fail, "1 of 2 ranks"},
		{"crash", nil, errors.New("rank 0 exited with status 2"), Fail, "status 2"},
	} {
		st, why := combine(two, c.ranks, c.jobErr, "", time.Second)
		if st != c.want || !strings.Contains(why, c.reason) {
			t.Errorf("%s: %v %q, want %v containing %q", c.name, st, why, c.want, c.reason)
		}
	}
}

func TestParseResults(t *testing.T) {
	out := "noise\n[1] PTLTEST-RESULT {\"rank\":1,\"status\":1,\"reason\":\"r\"}\nPTLTEST-RESULT {\"rank\":0,\"status\":0}\nPTLTEST-RESULT {bad\n"
	rs := parseResults(out)
	if len(rs) != 2 || rs[0].Rank != 1 || rs[0].Status != Fail || rs[0].Reason != "r" || rs[1].Status != Pass {
		t.Errorf("parseResults = %+v", rs)
	}
}

// A folder given through a symlink is searched like the folder itself.
func TestDiscoverThroughSymlink(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "corpus")
	if err := os.MkdirAll(filepath.Join(real, "test_n2"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(real, "test_n2", "c.xml"), []byte("<test/>"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	cases, err := Discover([]string{link}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) != 1 || cases[0].Name != "test_n2/c.xml" || cases[0].NP != 2 {
		t.Fatalf("Discover through a symlink = %+v", cases)
	}
}
