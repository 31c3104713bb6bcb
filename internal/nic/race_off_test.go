//go:build !race

package nic

// raceEnabled: the race detector is on (it allocates on its own, so allocation
// counts mean nothing).
const raceEnabled = false
