package nic

import (
	"time"

	"golang.org/x/sys/unix"
)

// napFor blocks the calling thread for about d: a nanosleep, whose length the
// runtime's timers would round up to a millisecond on an otherwise idle process.
// The thread's timer slack is lowered first, so the sleep does not last 50
// microseconds more than asked.
func napFor(d time.Duration) {
	unix.Prctl(unix.PR_SET_TIMERSLACK, 1000, 0, 0, 0)
	ts := unix.NsecToTimespec(d.Nanoseconds())
	unix.Nanosleep(&ts, nil)
}
