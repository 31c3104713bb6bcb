package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// rankSteps runs test over two ranks (sizes 8 to maxSize) with benchEvent's
// steps recorded, and returns each rank process's steps.
func rankSteps(t *testing.T, name, maxSize string) [][]string {
	t.Helper()
	dir := t.TempDir()
	t.Setenv(warmEventsEnv, dir)
	mustRun(t, 0, "-np", "2", "-min", "8", "-max", maxSize, "-iters", "20", "-window", "4",
		"-timeout", "1m", "-warm", "1ms", name)
	files, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var all [][]string
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(dir, f.Name()))
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, strings.Fields(string(b)))
	}
	if len(all) != 2 {
		t.Fatalf("%d rank processes recorded steps, want 2", len(all))
	}
	return all
}

// TestConnectionOpensBeforeWarmSpin: in the transfer tests an active rank's
// first operation toward its peer on the NI the test measures, which opens the
// connection (a handshake that sleeps), comes before the last warm spin ahead
// of the iterations, not in the untimed iterations after it: the Go runtime of
// a rank that slept keeps waking for some 20 ms after, and the spin is what
// absorbs that before the clock starts. The direct tests measure their own NI
// ("dop") and leave the matching NI ("op") alone, as send_lat does.
func TestConnectionOpensBeforeWarmSpin(t *testing.T) {
	for _, c := range []struct{ name, step, idle string }{
		{"put_lat", "op", "dop"}, {"get_lat", "op", "dop"}, {"atomic_lat", "op", "dop"}, {"put_bw", "op", "dop"},
		{"dput_lat", "dop", "op"}, {"dput_bw", "dop", "op"},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, steps := range rankSteps(t, c.name, "8") {
				op, spin := slices.Index(steps, c.step), -1
				for i, s := range steps {
					if s == "spin" {
						spin = i
					}
				}
				if op < 0 || op > spin {
					t.Errorf("steps %v: the first operation toward the peer (%q at %d) does not come before the last warm spin (%d)",
						steps, c.step, op, spin)
				}
				if slices.Contains(steps, c.idle) {
					t.Errorf("steps %v: the NI the test does not measure sent an operation (%q)", steps, c.idle)
				}
			}
		})
	}
}

// TestSendLatLeavesMatchingNIAlone: send_lat measures the provider's SEND
// beside an idle Portals process: the harness opens no connection of the
// matching NI for it.
func TestSendLatLeavesMatchingNIAlone(t *testing.T) {
	for _, steps := range rankSteps(t, "send_lat", "8") {
		if slices.Contains(steps, "op") || slices.Contains(steps, "dop") {
			t.Errorf("steps %v: an NI sent an operation in send_lat", steps)
		}
	}
}

// TestDirectBandwidthWithoutProgressGoroutines: with the NIs' progress
// goroutines off and the ranks joined over TCP, dput_bw's rank 1, which waits
// in the barrier after the measurement while rank 0 waits for the ACKs of its
// last window, drives its direct NI there as well as its matching NI (it drove
// only the matching one, and rank 0 waited until the timeout).
func TestDirectBandwidthWithoutProgressGoroutines(t *testing.T) {
	t.Setenv("PTL_PROGRESS_GOROUTINE", "0")
	t.Setenv("PTL_SOFT_PATH", "tcp")
	mustRun(t, 0, "-np", "2", "-min", "8", "-max", "64", "-iters", "20", "-window", "4",
		"-timeout", "20s", "dput_bw")
}
