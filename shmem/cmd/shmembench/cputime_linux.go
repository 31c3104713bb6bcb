package main

import (
	"time"

	"golang.org/x/sys/unix"
)

// threadCPU returns the CPU time (user and system) the calling thread has
// used, and true; the caller keeps its goroutine on the thread.
func threadCPU() (time.Duration, bool) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0, false
	}
	return time.Duration(ts.Nano()), true
}
