package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// warmEventsEnv names a directory where each rank (a child of this test binary)
// writes its benchEvent steps, one file per process.
const warmEventsEnv = "PTLBENCH_TEST_WARM_EVENTS"

func init() {
	dir := os.Getenv(warmEventsEnv)
	if dir == "" || os.Getenv(rankEnv) == "" {
		return
	}
	f, err := os.Create(filepath.Join(dir, fmt.Sprint(os.Getpid())))
	if err != nil {
		panic(err)
	}
	benchEvent = func(step string) { fmt.Fprintln(f, step) } // (unbuffered: the rank's exit loses nothing)
}

// TestWarmSpinIsLastBeforeIterations: in the tests that set up something of
// their own inside the measurement (send_lat, the soft-send peer of -compare,
// opens a queue pair behind a fence; dput_lat and dput_bw open a direct NI
// behind a barrier), an active rank spins -warm after that set-up's sleep, as
// every test does after the harness's barrier: nothing that sleeps comes between
// the spin and the iterations, so goportals and its peers start equally warm.
func TestWarmSpinIsLastBeforeIterations(t *testing.T) {
	for _, name := range []string{"send_lat", "dput_lat", "dput_bw"} {
		t.Run(name, func(t *testing.T) {
			gos := 0
			for _, steps := range rankSteps(t, name, "16") {
				for i, s := range steps {
					if s != "go" {
						continue
					}
					gos++
					if i == 0 || steps[i-1] != "spin" {
						t.Errorf("steps %v: iterations %d do not start right after a spin", steps, i)
					}
				}
			}
			if gos == 0 {
				t.Fatal("no rank reported the start of its iterations")
			}
		})
	}
}
