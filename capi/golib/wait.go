package main

import (
	"time"

	"github.com/goportals/goportals/portals"
	"github.com/goportals/goportals/portals/ptl"
	"github.com/goportals/goportals/ptlerr"
)

// The waits of the C ABI (PtlEQWait, PtlEQPoll, PtlCTWait, PtlCTPoll) first spin
// here, each round one non-blocking get that also drives a round of the NI's
// progress (ptl.EQGet, ptl.CTGet), and only then call the engine's waits. The
// engine's waits yield the processor (runtime.Gosched) every few dozen rounds so
// that a preempted progress goroutine can finish; but a call from a C thread runs
// on a goroutine locked to that thread, and there a yield hands the P to another
// thread and back: two context switches and futex wakes every few microseconds,
// which made a C ping-pong a quarter slower than the same one in Go. These loops
// never yield; the Go scheduler still preempts them when it must.

// spinRounds bounds the rounds a wait spins here before it calls the engine's
// wait, which spins a while more and then sleeps (as the engine's own waits
// spin before they sleep).
const spinRounds = 20000

// freedWhileWaiting returns PTL_INTERRUPTED for the error of a get on an object
// that was live when the wait began (round > 0) and has been freed since, as the
// engine's waits answer; nil for an error of another kind.
func freedWhileWaiting(op string, err error, round int) error {
	if round > 0 && portals.ErrnoOf(err) == portals.ArgInvalid {
		return ptlerr.New(op, portals.Interrupted, err)
	}
	return nil
}

// eqWait is PtlEQWait for a C caller.
func eqWait(q *portals.EQ) (portals.Event, error) {
	for i := 0; i < spinRounds; i++ {
		ev, err := ptl.EQGet(q)
		if err == nil || portals.ErrnoOf(err) == portals.EQDropped {
			return ev, err
		}
		if portals.ErrnoOf(err) == portals.EQEmpty {
			continue
		}
		if e := freedWhileWaiting("PtlEQWait", err, i); e != nil {
			return ev, e
		}
		break // the engine's wait gives the error its own words
	}
	return ptl.EQWait(q)
}

// deadline is when a poll of timeout milliseconds gives up (zero: never).
func deadline(timeout uint32) time.Time {
	if timeout == ptl.TimeForever {
		return time.Time{}
	}
	return time.Now().Add(time.Duration(timeout) * time.Millisecond)
}

// remaining is the timeout left until d, in milliseconds, for the engine's poll.
func remaining(timeout uint32, d time.Time) uint32 {
	if timeout == ptl.TimeForever {
		return timeout
	}
	left := time.Until(d)
	if left <= 0 {
		return 0
	}
	return uint32((left + time.Millisecond - 1) / time.Millisecond)
}

// expired reports, every 64 rounds, whether d has passed.
func expired(round int, d time.Time) bool {
	return round&63 == 63 && !d.IsZero() && time.Now().After(d)
}

// eqPoll is PtlEQPoll for a C caller.
func eqPoll(qs []*portals.EQ, timeout uint32) (portals.Event, int, error) {
	d := deadline(timeout)
	for i := 0; i < spinRounds && timeout != 0 && !expired(i, d); i++ {
		for k, q := range qs {
			ev, err := ptl.EQGet(q)
			if err == nil || portals.ErrnoOf(err) == portals.EQDropped {
				return ev, k, err
			}
			if portals.ErrnoOf(err) == portals.EQEmpty {
				continue
			}
			if e := freedWhileWaiting("PtlEQPoll", err, i); e != nil {
				return ev, k, e
			}
			return ptl.EQPoll(qs, remaining(timeout, d))
		}
	}
	return ptl.EQPoll(qs, remaining(timeout, d))
}

// reached reports whether v ends a wait for test (PtlCTWait, PtlCTPoll): the
// successes reach it, or any failure is counted.
func reached(v portals.CTEvent, test uint64) bool { return v.Success >= test || v.Failure > 0 }

// ctWait is PtlCTWait for a C caller.
func ctWait(c *portals.CT, test uint64) (portals.CTEvent, error) {
	for i := 0; i < spinRounds; i++ {
		v, err := ptl.CTGet(c)
		if err == nil {
			if reached(v, test) {
				return v, nil
			}
			continue
		}
		if e := freedWhileWaiting("PtlCTWait", err, i); e != nil {
			return v, e
		}
		break
	}
	return ptl.CTWait(c, test)
}

// ctPoll is PtlCTPoll for a C caller.
func ctPoll(cs []*portals.CT, tests []uint64, timeout uint32) (portals.CTEvent, int, error) {
	d := deadline(timeout)
	for i := 0; i < spinRounds && timeout != 0 && !expired(i, d); i++ {
		for k, c := range cs {
			v, err := ptl.CTGet(c)
			if err == nil {
				if reached(v, tests[k]) {
					return v, k, nil
				}
				continue
			}
			if e := freedWhileWaiting("PtlCTPoll", err, i); e != nil {
				return v, k, e
			}
			return ptl.CTPoll(cs, tests, remaining(timeout, d))
		}
	}
	return ptl.CTPoll(cs, tests, remaining(timeout, d))
}
