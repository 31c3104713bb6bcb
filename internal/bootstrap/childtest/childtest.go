// Package childtest judges the processes that multi-process tests start: a child
// passes only when it ends with the status the test expects and its output reports
// no data race, no panic and no fatal runtime error. A race reported by a child that
// then exits non-zero (or is killed) keeps that status, so the status alone misses
// it; the output shows it.
package childtest

import (
	"fmt"
	"regexp"
	"strings"
)

// RaceEnabled reports whether this binary was built with the race detector, and so
// whether children started from its own executable are.
const RaceEnabled = raceEnabled

// RaceExitCode is the status the race detector gives a process that reported a race
// and would otherwise have exited 0 (GORACE exitcode, 66 by default).
const RaceExitCode = 66

// BuildFlags are the extra "go build" flags for a program a test builds and runs as
// a child: -race when the test itself runs under the race detector.
func BuildFlags() []string {
	if RaceEnabled {
		return []string{"-race"}
	}
	return nil
}

// trouble matches the first line of a race report, a panic or a fatal runtime error
// (such as concurrent map writes), with or without a launcher's "[rank] " prefix.
var trouble = regexp.MustCompile(`(?m)^(?:\[\d+\] )?(?:WARNING: DATA RACE|panic: |fatal error: ).*$`)

// Trouble returns the first line of out that reports a data race, a panic or a
// fatal runtime error, or "" when there is none.
func Trouble(out string) string {
	return trouble.FindString(out)
}

// maxQuoted bounds the output quoted in an error (its head and tail are kept).
const maxQuoted = 32 << 10

// Check returns nil when a child (named by what) exited with status want and its
// output (stdout, stderr, ...) shows no trouble; otherwise an error that says what
// went wrong and quotes the output.
func Check(what string, status, want int, output ...string) error {
	out := strings.Join(output, "")
	var why []string
	if status != want {
		s := fmt.Sprintf("exited with status %d, want %d", status, want)
		if status == RaceExitCode && RaceEnabled {
			s += " (the race detector's status: a data race was reported)"
		}
		why = append(why, s)
	}
	if line := Trouble(out); line != "" {
		why = append(why, fmt.Sprintf("its output reports %q", line))
	}
	if len(why) == 0 {
		return nil
	}
	return fmt.Errorf("%s %s; output:\n%s", what, strings.Join(why, " and "), Quote(out))
}

// Quote returns out for an error message, cut in the middle when it is long.
func Quote(out string) string {
	if len(out) <= maxQuoted {
		return out
	}
	return out[:maxQuoted/2] + fmt.Sprintf("\n[... %d bytes cut ...]\n", len(out)-maxQuoted) + out[len(out)-maxQuoted/2:]
}
