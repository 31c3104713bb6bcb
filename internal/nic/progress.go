package nic

import (
	"context"
	"runtime"
	"sync/atomic"

	"github.com/goportals/goportals/internal/envknob"
	"github.com/goportals/goportals/internal/mdreg"
	"github.com/goportals/goportals/internal/napclock"
	"github.com/goportals/goportals/internal/nic/spin"

	"github.com/goportals/goportals/eq"
	"github.com/goportals/goportals/internal/verbs"
	"github.com/goportals/goportals/regcache"
)

// The engine's progress: one goroutine per NI polls the completion queue, spins
// briefly when it finds nothing, then blocks in the provider's wait (which sleeps).
// Completions are handled only under progMu, by that goroutine or by a caller
// that waits (EQ/CT waits) or needs send-queue room; the handlers never block:
// answers that find no room queue per peer (peer.sendOrQueue).

const progressSpin = 2048

// testNoHelpers, set by a test before NIInit, starts neither the NI's progress
// goroutine nor the rendezvous listener's: the calls that wait or poll must then do
// all the work themselves.
var testNoHelpers atomic.Bool

// countAppPolls, set by the package's tests, makes progressOnce count the rounds
// callers drive (ni.appPolls), so a test can see that a call waits on the engine.
// Off in the library: an atomic add per round of a polling loop is a write to a
// line the progress goroutine reads.
var countAppPolls bool

// noProgressGoroutine reports whether NIs run without their progress goroutine:
// PTL_PROGRESS_GOROUTINE=0 in the environment (or a test). Progress then happens
// only inside the calls that wait or poll, and the blocking waits (EQ.Wait,
// CT.Wait, EQPoll, CTPoll) keep driving it instead of sleeping: a process whose
// application never calls in then completes nothing, so the goroutine is the
// default.
func noProgressGoroutine() bool {
	return testNoHelpers.Load() || progressEnvOff
}

// progressEnvOff is PTL_PROGRESS_GOROUTINE=0, read once.
var progressEnvOff = envknob.Get(envknob.ProgressGoroutine) == "0"

func (ni *NI) run() {
	defer ni.wg.Done()
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-ni.stop; cancel() }()
	idle := 0
	clock := napclock.Process()
	napped := false // the last round ended a nap that found callers polling
	for {
		select {
		case <-ni.stop:
			return
		default:
		}
		if ni.progressOnce(false) > 0 {
			idle = 0
			continue
		}
		if ni.appPolled.Load() || ni.progHeld() {
			// A waiting caller drives progress itself, or is in a round of its own
			// (a pushed put's write, say): stay off the CPU until it stops polling
			// or is about to block (kick).
			// The nap is the process's, shared with the provider's helpers,
			// and grows while callers keep polling (see napclock).
			ni.appPolled.Store(false)
			idle = 0
			napped = true
			select {
			case <-clock.Nap():
			case <-ni.kickCh:
				// A caller is about to block: a nap that follows (callers
				// that polled just before) is the shortest again.
				clock.Stopped()
				napped = false
				// It polled during the nap, which still runs for the other
				// helpers: do not go back into it.
				ni.appPolled.Store(false)
			case <-ni.stop:
				return
			}
			continue
		}
		if napped {
			// The nap ended to find the callers gone: the next is the shortest.
			clock.Stopped()
			napped = false
		}
		if idle >= pushNapAfter && idle%pushNapAfter == 0 && ni.pushHint.Load() {
			// (Every pushNapAfter idle rounds: pushNap takes ni.mu, which the
			// callers take too.)
			if countAppPolls {
				pushNapAsked.Add(1)
			}
			if d := ni.pushNap(); d > 0 {
				napFor(d) // (see pushNap)
				idle = 0
				continue
			}
		}
		if idle++; idle < progressSpin || ni.queued.Load() > 0 {
			// (queued sends wait for room that frees without a completion: keep polling)
			if countAppPolls {
				progressIdle.Add(1)
			}
			if idle%waitYieldEvery == 0 {
				// Rarely, as the waits' spins (waitYield): a yield with a
				// processor idle wakes an OS thread.
				if countAppPolls {
					progressYields.Add(1)
				}
				runtime.Gosched()
			} else {
				spin.Pause()
			}
			continue
		}
		idle = 0
		if err := ni.cq.Wait(ctx); err != nil {
			return
		}
	}
}

// progHeld reports whether a caller holds progMu (only callers that drive
// progress and this goroutine take it): spinning beside its round would only
// take a processor from it or from its peer.
func (ni *NI) progHeld() bool {
	if ni.progMu.TryLock() {
		ni.progMu.Unlock()
		return false
	}
	return true
}

// progressIdle and progressYields count the progress goroutines' idle spin rounds
// and their yields, for the package's tests (countAppPolls).
var progressIdle, progressYields atomic.Uint64

// pushNapAsked counts the progress goroutines' calls of pushNap, for the
// package's tests (countAppPolls).
var pushNapAsked atomic.Uint64

// kick ends the progress goroutine's nap: a waiting caller is about to block.
func (ni *NI) kick() {
	select {
	case ni.kickCh <- struct{}{}:
	default:
	}
}

// progressOnce posts queued engine sends and handles one batch of completions, unless
// another goroutine is doing so. Callers that wait (EQ and CT waits) run it
// themselves, so the completion that ends their wait needs no goroutine hand-off.
func (ni *NI) progressOnce(app bool) int {
	if app && countAppPolls {
		ni.appPolls.Add(1)
	}
	if app && !ni.appPolled.Load() {
		// A store only when the goroutine cleared it: a polling caller reads a
		// line the goroutine writes once per nap, not once per round.
		ni.appPolled.Store(true)
	}
	if !ni.progMu.TryLock() {
		return 0
	}
	if ni.dead.Load() {
		ni.progMu.Unlock()
		return 0
	}
	n := ni.progressLocked()
	ni.polls++
	listen := ni.polls%listenerPollEvery == 0
	ni.progMu.Unlock()
	if listen {
		// Connection requests are served by the calls that drive progress too, not
		// only by the listener's goroutine.
		ni.proc.pollListener()
	}
	if n > 0 && ni.trig.fired() {
		// Completions counted on a counter released triggered operations.
		ni.issueFired(false)
	}
	return n
}

// progressLocked is progressOnce's work, with progMu held.
func (ni *NI) progressLocked() int {
	n := 0
	if ni.queued.Load() > 0 {
		for _, pr := range ni.peerList() {
			n += pr.flushQueue()
		}
	}
	if ni.mcq != nil && len(ni.recvQ) == 0 && ni.msgRounds < msgRoundsMax {
		// Messages first, handled as they are handed out. The completion queue
		// comes first again after a message that started a long transfer (its
		// completion, then its answer, before the next one starts: the handler
		// ends the poll there) and at least every msgRoundsMax rounds, so
		// completions never starve behind a stream of messages.
		ni.msgRounds++
		ni.msgLongs = ni.longs.Load()
		var k, w int
		var err error
		if ni.rcq != nil {
			k, w, err = ni.rcq.PollRound(ni.msgFn, len(ni.wcs), ni.wcs[:])
		} else {
			k, err = ni.mcq.PollMessages(ni.msgFn, len(ni.wcs))
		}
		if err == nil && k > 0 {
			if ni.longs.Load() != ni.msgLongs {
				ni.msgRounds = msgRoundsMax
			}
			return n + k
		}
		if err == nil && ni.rcq != nil {
			// No message: the same call polled the completion queue.
			ni.msgRounds = 0
			return n + ni.handleWCs(w)
		}
	}
	ni.msgRounds = 0
	k, err := ni.cq.Poll(ni.wcs[:])
	if err != nil {
		k = 0
	}
	return n + ni.handleWCs(k)
}

// roundPoller is a message-mode completion queue that runs PollMessages and, when
// that handed out no message, Poll in one call (msgs is the first's answer, n the
// second's), cheaper than the two calls: the soft provider takes its progress lock
// once for both.
type roundPoller interface {
	PollRound(h verbs.MessageHandler, max int, wc []verbs.WorkCompletion) (msgs, n int, err error)
}

// handleWCs handles the k completions polled into ni.wcs (with progMu held) and
// returns the work done: k, and the messages left for the next round.
func (ni *NI) handleWCs(k int) int {
	// Send and RDMA completions are handled at once; messages in arrival order,
	// and after one that started a long transfer the round ends: a provider that
	// copies synchronously (the soft one's cross-memory READ) has just moved a whole
	// message, and the next round takes that transfer's completion first, so its
	// answer goes out before the next transfer starts. The initiator then sees its
	// answers one by one, not a window's worth at once after all the copies.
	if k == 1 && len(ni.recvQ) == 0 && ni.wcs[0].ID&widMask == widRecv {
		// One message and nothing left from before: handled where it was polled,
		// in arrival order as below, and a long transfer it starts ends the round
		// all the same.
		ni.handleWC(&ni.wcs[0])
		return 1
	}
	for i := range ni.wcs[:k] {
		wc := &ni.wcs[i]
		if wc.ID&widMask == widRecv {
			ni.recvQ = append(ni.recvQ, *wc)
			continue
		}
		ni.handleWC(wc)
	}
	done := 0
	for done < len(ni.recvQ) {
		before := ni.longs.Load()
		ni.handleWC(&ni.recvQ[done])
		done++
		if ni.longs.Load() != before {
			break
		}
	}
	left := copy(ni.recvQ, ni.recvQ[done:])
	clear(ni.recvQ[left:])
	ni.recvQ = ni.recvQ[:left]
	// Messages left for the next round count as work: the caller must not sleep.
	return k + left
}

// assist runs a progress round for a caller outside the engine that waits for
// room in a send queue, or yields if another goroutine is running one.
func (ni *NI) assist() {
	if ni.progressOnce(true) == 0 {
		runtime.Gosched()
	}
}

func (ni *NI) handleWC(wc *verbs.WorkCompletion) {
	switch wc.ID & widMask {
	case widRecv:
		r := int(wc.ID>>16) & 0xffff
		slot := int(wc.ID & 0xffff)
		peers := ni.peerList()
		if r >= len(peers) {
			return
		}
		pr := peers[r]
		if wc.Status != verbs.StatusSuccess {
			ni.peerFailed(pr)
			return
		}
		ni.handleMsg(pr, pr.slot(slot)[:wc.ByteLen])
		if pr.repost(slot) != nil {
			ni.peerFailed(pr)
		}
	case widSend:
		if wc.Status != verbs.StatusSuccess {
			if r, peers := int(wc.ID&^widMask), ni.peerList(); r < len(peers) {
				ni.peerFailed(peers[r])
			}
		}
	case widTarget:
		ni.targetDone(wc.ID&^widMask, wc.Status == verbs.StatusSuccess)
	}
}

// handleMsg handles one message of pr: a request or an answer. msg is only
// read, and only during the call.
func (ni *NI) handleMsg(pr *peer, msg []byte) {
	var h header
	if !h.decode(msg) {
		ni.status[SRMalformed].Add(1)
		return
	}
	payload := h.payloadOf(msg)
	if h.kind == msgAck || h.kind == msgReply {
		ni.handleAnswer(pr, &h, payload)
	} else {
		ni.handleRequest(pr, &h, payload)
	}
}

// msgRoundsMax is how many rounds in a row may hand out messages before one polls
// the completion queue.
const msgRoundsMax = 16

// testNoMessages, set by a test before NIInit, keeps the NI off the provider's
// message mode (work requests and posted receives only).
var testNoMessages bool

// onMessage is the engine's verbs.MessageHandler: the message of the connection
// whose index is tag, read in place in the provider's memory during the call. It
// runs inside the provider's progress (under progMu here): it must not close a
// connection. It ends the poll after a message that started a long transfer.
func (ni *NI) onMessage(tag uint64, msg []byte) bool {
	peers := ni.peerList()
	if tag >= uint64(len(peers)) {
		return true
	}
	ni.handleMsg(peers[tag], msg)
	return ni.longs.Load() == ni.msgLongs
}

// handleAnswer completes an initiator operation with its ACK or REPLY.
func (ni *NI) handleAnswer(pr *peer, h *header, payload []byte) {
	ni.mu.Lock()
	defer ni.mu.Unlock()
	o := ni.ops[h.opid]
	if o == nil || o.pr != pr || h.mlength > o.length || (h.kind == msgAck) != (o.kind == msgPut || o.kind == msgAtomic) {
		ni.status[SRMalformed].Add(1)
		return
	}
	fail := eq.NIFail(h.fail)
	// The SEND event comes first, even when the answer overtook the sender (an
	// eager request) or is what ends it (a long put: the target is done with our
	// buffer whatever became of the data).
	ni.sendEvent(o, eq.NIOK)
	switch h.kind {
	case msgAck:
		if h.flags&hfNoAck == 0 && o.ack != NoAckReq {
			ni.initEvent(o, o.md, eq.EventAck, fail, h.mlength, h.roff, h.list)
		}
	case msgReply:
		dst, off := o.md, o.localOff
		if o.getMD != nil {
			dst, off = o.getMD, o.getOff
		}
		if fail == eq.NIOK && len(payload) > 0 {
			n := min(uint64(len(payload)), h.mlength, o.length)
			if _, err := dst.mem.WriteAt(payload[:n], off); err != nil {
				fail = eq.NISegv // raw memory not mapped where the reply goes
			}
		}
		ni.initEvent(o, dst, eq.EventReply, fail, h.mlength, h.roff, h.list)
	}
	ni.finish(o)
}

// peerFailed fails every operation in flight to pr: their events carry
// NI_UNDELIVERABLE.
func (ni *NI) peerFailed(pr *peer) {
	pr.sendMu.Lock()
	pr.failed = true
	pr.broken.Store(true)
	pr.sendMu.Unlock()
	ni.mu.Lock()
	defer ni.mu.Unlock()
	for _, o := range ni.ops {
		if o.pr == pr {
			ni.failOp(o)
		}
	}
	ni.failPushTops(pr)
}

// failOp completes o with NI_UNDELIVERABLE events: the answer will never come.
// Called with ni.mu held.
func (ni *NI) failOp(o *initOp) {
	if o.tracked && ni.ops[o.id] != o {
		return // already completed (peerFailed got there first)
	}
	ni.sendEvent(o, eq.NIUndeliverable)
	switch o.kind {
	case msgGet, msgFetch, msgSwap:
		dst := o.md
		if o.getMD != nil {
			dst = o.getMD
		}
		ni.initEvent(o, dst, eq.EventReply, eq.NIUndeliverable, 0, o.roff, 0)
	default:
		if o.ack != NoAckReq {
			ni.initEvent(o, o.md, eq.EventAck, eq.NIUndeliverable, 0, o.roff, 0)
		}
	}
	ni.finish(o)
}

// registry returns the NI's registration registry, made on first use.
func (ni *NI) registry() (*mdreg.Registry, error) {
	ni.regOnce.Do(func() {
		ni.reg, ni.regErr = mdreg.NewRegistry(ni.pd,
			verbs.AccessLocalWrite|verbs.AccessRemoteRead|verbs.AccessRemoteWrite, regcache.Options{})
	})
	return ni.reg, ni.regErr
}
