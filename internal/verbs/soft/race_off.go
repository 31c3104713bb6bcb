//go:build !race

package soft

func raceRelease() {}
func raceAcquire() {}

// raceEnabled reports whether the race detector is built in.
const raceEnabled = false
