//go:build race

package eq

import (
	"runtime"
	"unsafe"
)

// A counter's value lives in a Cell that may lie outside the Go heap (shared
// memory, memory C code reads), where the race detector does not see the atomics:
// an add there and a read that observes it would look unordered, and so would the
// data the adder wrote before counting and the reader reads after. These calls
// declare the edge on a Go variable: every add releases, every read acquires.
var raceSync uint64

func raceRelease() { runtime.RaceReleaseMerge(unsafe.Pointer(&raceSync)) }
func raceAcquire() { runtime.RaceAcquire(unsafe.Pointer(&raceSync)) }
