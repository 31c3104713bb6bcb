//go:build !race

package ibv

const raceEnabled = false
