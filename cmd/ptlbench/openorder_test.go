package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// rankSteps runs test over two ranks (one size) with benchEvent's steps
// recorded, and returns each rank process's steps.
func rankSteps(t *testing.T, name string) [][]string {
	t.Helper()
	dir := t.TempDir()
	t.Setenv(warmEventsEnv, dir)
	mustRun(t, 0, "-np", "2", "-min", "8", "-max", "8", "-iters", "20", "-window", "4",
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
// first operation toward its peer, which opens the connection (a handshake that
// sleeps), comes before the last warm spin ahead of the iterations, not in the
// untimed iterations after it: the Go runtime of a rank that slept keeps waking
// for some 20 ms after, and the spin is what absorbs that before the clock
// starts. The direct tests open their own NI's connection the same way.
func TestConnectionOpensBeforeWarmSpin(t *testing.T) {
	for _, name := range []string{"put_lat", "get_lat", "atomic_lat", "put_bw", "dput_lat", "dput_bw"} {
		t.Run(name, func(t *testing.T) {
			for _, steps := range rankSteps(t, name) {
				op, spin := slices.Index(steps, "op"), -1
				for i, s := range steps {
					if s == "spin" {
						spin = i
					}
				}
				if op < 0 || op > spin {
					t.Errorf("steps %v: the first operation toward the peer (%d) does not come before the last warm spin (%d)",
						steps, op, spin)
				}
			}
		})
	}
}

// TestSendLatLeavesMatchingNIAlone: send_lat measures the provider's SEND
// beside an idle Portals process: the harness opens no connection of the
// matching NI for it.
func TestSendLatLeavesMatchingNIAlone(t *testing.T) {
	for _, steps := range rankSteps(t, "send_lat") {
		if slices.Contains(steps, "op") {
			t.Errorf("steps %v: the matching NI sent an operation in send_lat", steps)
		}
	}
}
