//go:build !race

package soft

// raceReadBytes does nothing without the race detector.
func raceReadBytes([]byte) {}
