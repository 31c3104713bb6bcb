//go:build race

package soft

import (
	"runtime"
	"unsafe"
)

// raceReadBytes tells the race detector that b is read now (by the kernel, in
// the system call that follows).
func raceReadBytes(b []byte) { runtime.RaceReadRange(unsafe.Pointer(unsafe.SliceData(b)), len(b)) }
