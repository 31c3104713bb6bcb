//go:build !race

package eq

func raceRelease() {}
func raceAcquire() {}
