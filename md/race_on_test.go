//go:build race

package md

// raceEnabled reports that the test binary runs with the race detector (and checkptr).
const raceEnabled = true
