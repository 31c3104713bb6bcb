// Package napclock is the one nap that the library's helper goroutines share
// while the application polls.
//
// While an application spins in a wait it drives progress itself, and the
// helpers (the engine's progress goroutine, the soft provider's context
// goroutine and its TCP poller) step aside: each naps, and when its nap ends it
// looks whether the application still polls. Every end of a nap wakes an OS
// thread, and on a host whose cores all spin (one rank per core) that thread
// preempts a rank: a put ping-pong over TCP lost a round trip to most such
// wakes, about 5 % of its mean at one wake per millisecond.
//
// Two things keep the wakes few. The helpers of a process share one nap (one
// timer, so one wake, however many helpers wait on it), and naps that follow
// one another while the application keeps polling double in length, from
// NapMin up to NapMax. A helper that finds the application stopped says so
// (Stopped), and the next nap is NapMin again. What this costs: a process whose
// application polled for a while and then stopped without blocking (a target
// gone off to compute after a burst of polling) gets its helpers back when the
// nap they are in ends, or the one after if it polled early in the first (up to
// about twice NapMax); one that blocks in a wait kicks them at once.
package napclock
