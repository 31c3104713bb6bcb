package soft

import (
	"sync"
	"time"
)

// A link's poll round, and how often rounds look at its socket: the pacing
// that keeps a spinning caller from making a system call per round on a link
// that has nothing to read.

// round runs one round of the link for the context's progress, without
// blocking: it receives and serves what arrived, and sends what waits (where the
// poller serves the link, only frames that wait for room and answers whose
// delay ran out: the others ride with the next request). It returns the number
// of frames handled (or 1 while data waits to go), whether it read the socket
// of a hot link and found nothing, and whether the link is idle and left to the
// context's look at its set (see Context.pollLinksAfter).
func (l *tcpLink) round() (n int, emptyHot, idle bool) {
	if !l.viaPoller {
		if l.flushTx() {
			n = 1
		}
		return n + l.pollRx(), false, false
	}
	if l.ended.Load() {
		return 0, false, false // (broken is on its way)
	}
	var now int64
	if next := l.nextLook.Load(); next != 0 {
		if now = tcpClock(); now < next {
			return 0, false, false
		}
	}
	if l.txWait.Load() || l.ackOverdue() {
		if l.flushTx() {
			n = 1
		}
	}
	// A hot link (one that received a moment ago: what it waits for, an
	// answer or the next request of a ping-pong, is likely close) is read at
	// once; the read is its look. An idle one is looked at first: a look at the
	// socket's readiness costs a system call too, but not the socket's lock
	// (see readable). The idle links of the look set are looked at together,
	// by the context (lookIdle: one call for all of them); a link outside it
	// (no epoll) is looked at alone, once per gap.
	got, emptyRead, emptyLook := 0, false, false
	hot := l.quiet.Load() <= tcpHotLooks
	pending := l.stalled.Load() || l.rbLeft.Load() // read without a look
	readHot := hot && !pending
	if l.msgHeld.Load() {
		// A message waits for PollMessages: nothing is read behind it.
	} else if !hot && !pending && l.inSet && !l.noArm.Load() && (l.armed.Load() || l.q.ctx.setArm(l)) {
		idle = true // the context's look at its set covers it (lookIdle)
	} else if pending || readHot || l.look() {
		empty, reads := l.nEmpty.Load(), l.nReads.Load()
		got = l.pollRx()
		if readHot && l.nReads.Load() != reads {
			// The hot link's read is its look. (A round that finds
			// another one reading, its receive lock taken, reads nothing
			// and counts no look.)
			l.nLooks.Add(1)
		}
		emptyRead = got == 0 && l.nEmpty.Load() != empty
		emptyHot = emptyRead && readHot
		if emptyHot && l.armed.Load() {
			// Hot again (the look at the set found it, or its own look):
			// its socket leaves the set while nothing arrives.
			l.q.ctx.setDisarm(l)
		}
	} else {
		emptyLook = true
	}
	gap := time.Duration(0)
	switch {
	case n != 0 || l.thin.Load():
		// Frames wait for room, or a large payload trickles in: let the
		// socket drain or fill before the next look.
		gap = tcpBulkGap
	case idle:
		// No gap of its own: the set's look paces it (and a clock reading
		// per round for it would be wasted).
	case emptyRead && !hot:
		gap = tcpPollGap // a read found nothing
	case emptyLook || emptyRead:
		// (A hot link's read that found nothing counts as an empty look: no
		// gap while the link stays hot, a bulk transfer's pacing all the same.)
		if b := l.bulkUntil.Load(); b != 0 {
			if now == 0 {
				now = tcpClock()
			}
			if now < b {
				// A large frame is partly here: the next piece of the
				// transfer is not far, and a look per round would be a
				// system call per round for all of it.
				gap = tcpBulkIdleGap
				break
			}
			l.bulkUntil.Store(0)
		}
		if q := l.quiet.Load(); q <= tcpHotLooks {
			l.quiet.Store(q + 1) // (rounds racing may count one look once)
		} else {
			// Idle for a while: a look per round would lengthen every
			// round for the other links. (A busy link, between small
			// frames, gets no gap: it would delay the next message's
			// arrival by as much.)
			gap = tcpPollGap
		}
	}

	if gap != 0 {
		if now == 0 {
			now = tcpClock()
		}
		l.nextLook.Store(now + int64(gap))
	} else if l.nextLook.Load() != 0 {
		l.nextLook.Store(0)
	}
	return n + got, emptyHot, idle
}

// tcpHotPause is how long a caller's poll round waits, spinning without a
// system call, when it read a hot link's socket and found nothing and received
// nothing else (a variable for the tests; 0: no wait). Reads back to back hold
// the socket's lock half of the time, and a segment that the kernel delivers
// meanwhile goes to the socket's backlog, which the reader's release applies
// only after its read has looked: the segment waits for the next read, and the
// reader applies it on the critical path. A pause about as long as an empty
// read halves the reads: an 8-byte put ping-pong over loopback took 0.987 and
// 0.988 of the time without it (paired medians of 10 and 12 alternated runs);
// four times as long made it 12% slower.
var tcpHotPause = 250 * time.Nanosecond

// pauseTime is how long a cpuPause call takes on this machine, measured once
// (0 where it does nothing).
var pauseTime = sync.OnceValue(func() time.Duration {
	const probe = 256
	t0 := time.Now()
	for i := 0; i < probe; i++ {
		cpuPause()
	}
	return time.Since(t0) / probe
})

// hotPause waits about d, spinning without a system call.
func hotPause(d time.Duration) {
	per := pauseTime()
	if per <= 0 {
		return
	}
	for i := min(d/per, 1024); i > 0; i-- {
		cpuPause()
	}
}

// tcpBulkGap is how long poll rounds leave a link's socket alone while a large
// transfer is under way and the last look found the socket nearly empty (a read
// of a large payload got less than tcpBulkRead) or full (frames still wait for
// room): a look per round moved a few kilobytes per system call. The kernel
// moves about tcpBulkRead in the gap at loopback speed. (tcpBulkGap is a
// variable for the tests.)
var tcpBulkGap = 16 * time.Microsecond

const tcpBulkRead = 64 << 10

// tcpBulkHold is how long at most a link counts as carrying a large frame (of
// tcpBulkRead bytes or more) after it began to come (a variable for the tests).
var tcpBulkHold = time.Millisecond

// tcpHotLooks is how many looks in a row may find a link's socket empty
// before the link counts as idle (a variable for the tests): counted, not
// timed, so that a busy link's looks cost no clock reading. A spinning caller
// looks a few hundred times in 100 µs.
var tcpHotLooks uint32 = 256

// tcpBulkIdleGap is how long poll rounds leave alone a socket that a look
// found empty while the link carries large frames (a variable for the tests).
var tcpBulkIdleGap = 8 * time.Microsecond

// markBulk records that an incoming frame of n payload bytes begins on the
// link: while a large one is partly received, the rest of it is on its way.
// (Between frames, or while a request waits for its answer, what comes next may
// be an answer or the next request of a ping-pong: endFrame clears the mark.)
func (l *tcpLink) markBulk(n uint64) {
	if n >= tcpBulkRead {
		l.bulkUntil.Store(tcpClock() + int64(tcpBulkHold))
	}
}

// tcpPollGap is how long poll rounds leave a link's socket alone after a read
// found it empty (a look at its readiness that finds nothing leaves no gap: it
// does not take the socket's lock). An empty read costs a system call and the
// socket's lock, which the kernel's delivery of the next segment then waits
// for. The gap bounds the delay it adds to a message's arrival.
var tcpPollGap = 2 * time.Microsecond

// look reports whether the socket holds data to read, and counts the look.
func (l *tcpLink) look() bool {
	l.nLooks.Add(1)
	return readable(l.fd)
}

// ackOverdue reports whether an answer waits for a frame to ride with longer
// than tcpAnswerDelay.
func (l *tcpLink) ackOverdue() bool {
	due := l.ackDue.Load()
	return due != 0 && due <= tcpClock()
}
