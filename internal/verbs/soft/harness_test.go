package soft

import (
	"strings"
	"testing"
)

// TestChildVerdict tests the multi-process harness itself: a child that races,
// exits 1 or panics after a normal session must make finish (which every test's
// cleanup reports) return an error that carries the child's stderr; a clean child,
// or one the test kills on purpose, must not.
func TestChildVerdict(t *testing.T) {
	cases := []struct {
		fault string
		want  []string // in the verdict; nil: no verdict
	}{
		{"", nil},
		{"race", []string{"status 66", "reported a data race", "WARNING: DATA RACE", "deliberateRace"}},
		{"exit1", []string{"exit status 1", "child: failing on purpose (exit1)"}},
		{"panic", []string{"panicked", "child: panicking on purpose"}},
	}
	for _, tc := range cases {
		name := tc.fault
		if name == "" {
			name = "clean"
		}
		t.Run(name, func(t *testing.T) {
			if tc.fault == "race" && !raceEnabled {
				t.Skip("the race detector is not built in")
			}
			t.Parallel()
			c, _ := startChildFault(t, tc.fault)
			c.ownVerdict = true
			// A normal session first: the fault comes when it ends.
			c.reg("x", 64, rw, 1)
			if got := c.do("sum x"); len(got) != 1 {
				t.Fatalf("sum: %q", got)
			}
			err := c.finish()
			if tc.want == nil {
				if err != nil {
					t.Fatalf("a clean child got a failing verdict: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("a child with fault %q got no failing verdict (its stderr: %q)", tc.fault, c.stderr.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("verdict lacks %q:\n%v", w, err)
				}
			}
			if c.finish() != err {
				t.Error("a second finish returned another verdict")
			}
		})
	}
	t.Run("killed", func(t *testing.T) {
		t.Parallel()
		c, _ := startChild(t)
		c.ownVerdict = true
		c.kill()
		if err := c.waitExit(childExitTimeout); err != nil {
			t.Fatal(err)
		}
		if err := c.finish(); err != nil {
			t.Fatalf("a child killed by the test got a failing verdict: %v", err)
		}
	})
}
