//go:build race

package soft

import (
	"runtime"
	"unsafe"
)

// The race detector cannot see the happens-before edges that the rings carry
// through shared memory (the atomics live outside the Go heap). These calls
// declare them on a Go variable: a consumer releases after applying a message and
// a producer acquires before trusting what the consumer did.
var raceSync uint64

func raceRelease() { runtime.RaceReleaseMerge(unsafe.Pointer(&raceSync)) }
func raceAcquire() { runtime.RaceAcquire(unsafe.Pointer(&raceSync)) }

// raceEnabled reports whether the race detector is built in.
const raceEnabled = true
