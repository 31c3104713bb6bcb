package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestConnectionOpensBeforeWarmSpin: in the transfer tests an active rank's
// first operation toward its peer, which opens the connection (a handshake that
// sleeps), comes before its first warm spin, not in the untimed iterations after
// it: the Go runtime of a rank that slept keeps waking for some 20 ms after, and
// the spin is what absorbs that before the clock starts.
func TestConnectionOpensBeforeWarmSpin(t *testing.T) {
	for _, name := range []string{"put_lat", "get_lat", "atomic_lat", "put_bw"} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			t.Setenv(warmEventsEnv, dir)
			mustRun(t, 0, "-np", "2", "-min", "8", "-max", "16", "-iters", "20", "-window", "4",
				"-timeout", "1m", "-warm", "1ms", name)
			files, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			ranks := 0
			for _, f := range files {
				b, err := os.ReadFile(filepath.Join(dir, f.Name()))
				if err != nil {
					t.Fatal(err)
				}
				steps := strings.Fields(string(b))
				op, spin := slices.Index(steps, "op"), slices.Index(steps, "spin")
				if op < 0 {
					continue // (the launcher's own process)
				}
				ranks++
				if spin < 0 || op > spin {
					t.Errorf("rank process %s: steps %v: the first operation toward the peer (%d) comes after the first warm spin (%d)",
						f.Name(), steps, op, spin)
				}
			}
			if ranks != 2 {
				t.Fatalf("%d rank processes reported an operation, want 2 (%d files)", ranks, len(files))
			}
		})
	}
}
