package nic

import (
	"time"

	"github.com/goportals/goportals/eq"
	"github.com/goportals/goportals/internal/envknob"
	"github.com/goportals/goportals/internal/verbs"
)

// pushPuts says whether this process offers to push its long puts (hfPush):
// PTL_LONG_PUT=pull keeps them pulled by the target, read once. splitPuts says
// whether, as a target, it splits a pushed put whose data a CPU copies (the soft
// provider's shared-memory path): the initiator writes the first half, and we read
// the second at the same time, so both processes' cores copy (PTL_LONG_PUT=push
// leaves all of it to the initiator).
var (
	pushPuts  = envknob.Get(envknob.LongPut) != "pull"
	splitPuts = pushPuts && envknob.Get(envknob.LongPut) != "push"
)

// A pushed put is split when the target's range holds at least splitMin bytes; the
// initiator's part ends on a splitAlign boundary of the range. Below that, the
// target's READ and its completion cost about what its half of the copy saves.
const (
	splitMin   = 128 << 10
	splitAlign = 4096
)

// copiesOnCPU reports whether RDMA to pr is a copy by the posting process's CPU
// (the soft provider in a node: cross-memory attach), where a split put has two
// cores copying. Over TCP both halves would cross the same stream, and an HCA
// moves the data alone.
func copiesOnCPU(pr *peer) bool {
	q, ok := pr.qp.(pather)
	return ok && q.Path() == "shm"
}

// Splits returns how many pushed long puts this NI split as their target (read
// their second part itself), for tests and measurements.
func (ni *NI) Splits() uint64 { return ni.splits.Load() }

// Pushes returns how many long puts this NI wrote into their targets itself (on
// the targets' msgCTS), for tests and measurements.
func (ni *NI) Pushes() uint64 { return ni.pushes.Load() }

// pairSegments builds the RDMA requests that move n bytes, from byte off of both
// sides on, between local (our scatter-gather list, in order) and the remote
// segments encoded in segs (16 bytes each, putSeg), one request per remote segment
// piece with at most 16 of our SGEs. It reports false when either side holds fewer
// than off+n bytes or n is 0.
func pairSegments(local []verbs.SGE, segs []byte, off, n uint64, op verbs.Opcode, id uint64, flags verbs.SendFlags) ([]verbs.SendWR, bool) {
	remaining := n
	li, loff := 0, uint64(0)
	for skip := off; skip > 0 && li < len(local); {
		take := min(uint64(local[li].Length)-loff, skip)
		skip -= take
		if loff += take; loff == uint64(local[li].Length) {
			li, loff = li+1, 0
		}
	}
	rskip := off
	var wrs []verbs.SendWR
	for i := 0; i+16 <= len(segs) && remaining > 0; i += 16 {
		seg := getSeg(segs[i:])
		if l := uint64(seg.Len); rskip >= l {
			rskip -= l
			continue
		}
		seg.Addr += rskip
		seg.Len -= uint32(rskip)
		rskip = 0
		k := min(uint64(seg.Len), remaining)
		remaining -= k
		var sg []verbs.SGE
		raddr := seg.Addr
		for k > 0 && li < len(local) {
			l := local[li]
			take := min(uint64(l.Length)-loff, k)
			sg = append(sg, verbs.SGE{Addr: l.Addr + loff, Length: uint32(take), LKey: l.LKey})
			k -= take
			loff += take
			if loff == uint64(l.Length) {
				li, loff = li+1, 0
			}
			if len(sg) == 16 || k == 0 {
				var sz uint64
				for _, s := range sg {
					sz += uint64(s.Length)
				}
				wrs = append(wrs, verbs.SendWR{ID: id, Opcode: op, Flags: flags, SG: sg, RemoteAddr: raddr, RKey: seg.RKey})
				raddr += sz
				sg = nil
			}
		}
		if k > 0 {
			return nil, false // our side ran out
		}
	}
	if remaining > 0 || len(wrs) == 0 {
		return nil, false
	}
	return wrs, true
}

// handleCTS is the initiator's half of a pushed long put: it writes the first
// mlength bytes of the operation's data into the target's segments and sends
// msgFin behind the writes. A CTS that names no pushed put of ours still gets a
// failed FIN, so the target releases its entry. Called from progress without
// ni.mu.
func (ni *NI) handleCTS(pr *peer, h *header, segs []byte) {
	fin := header{kind: msgFin, hdrData: h.hdrData, pt: h.pt}
	ni.mu.Lock()
	o := ni.ops[h.opid]
	var wrs []verbs.SendWR
	ok := o != nil && o.pr == pr && o.kind == msgPut && o.long && o.pinned != nil && !o.pushed &&
		h.mlength > 0 && h.mlength <= o.length
	if ok {
		o.pushed = true
		// Unsignaled (but for one in every signalN requests on the queue pair,
		// postLocked): a provider that frees send queue entries only at a
		// completion (an HCA) gets them back, and the others cost no completion
		// to post and poll. A failure completes all the same and fails the peer
		// (handleWC's widSend), and with it this operation.
		wrs, ok = pairSegments(o.pinned.SGEs(nil), segs, 0, h.mlength, verbs.OpRDMAWrite, widSend|uint64(pr.idx), 0)
	}
	ni.mu.Unlock()
	if !ok {
		ni.status[SRMalformed].Add(1)
		fin.fail = uint8(eq.NIUndeliverable)
		pr.sendOrQueue(&fin)
		return
	}
	for _, wr := range wrs {
		if err := pr.postOrQueue(wr); err != nil {
			if err != errPeerFailed {
				// The provider rejected the write: the data will not come, and
				// the target, whose connection still works, must hear so.
				fin.fail = uint8(eq.NIUndeliverable)
				pr.sendOrQueue(&fin)
			}
			return // (a failed peer: both sides fail the operation)
		}
	}
	// The round goes on (unlike after a pulled transfer, which ends it so its
	// completion and answer go first): the next CTS is the next write, and the
	// writes wait for nothing that a completion would bring.
	ni.pushes.Add(1)
	pr.sendOrQueue(&fin)
}

// A target whose only work is pushed puts waiting for their data naps between
// looks for their FINs while more than one waits: the initiator writes them one
// after the other, so the FINs before the last come no sooner than the data
// behind them takes to move, and a target that spins meanwhile takes a processor
// the writer (or anything else) could use, while one that sleeps until woken
// costs the writer a wake-up call per FIN. The last one the target waits for
// spinning, as any answer. The nap is half the time the data beyond one put
// takes at pushNapRate, at most pushNapMax; none is shorter than pushNapMin.
const (
	pushNapAfter = 64                     // idle rounds before a nap, and between the looks whether to nap
	pushNapRate  = 16 << 10               // bytes per microsecond assumed to move
	pushNapMin   = 10 * time.Microsecond  // shorter naps are not worth a sleep
	pushNapMax   = 100 * time.Microsecond // a new request waits at most this long
)

// pushNap returns how long the progress goroutine may nap, or 0 when it must
// keep spinning: a target operation that is not a pushed put (a pull's RDMA
// completions), an initiator operation of this NI (its answer, or a CTS to
// write for, would wait the nap), engine sends queued for room, or fewer than
// two pushed puts waiting. It clears pushHint when
// none waits. Called by the progress goroutine, without ni.mu.
func (ni *NI) pushNap() time.Duration {
	ni.mu.Lock()
	defer ni.mu.Unlock()
	n, bytes, largest := 0, uint64(0), uint64(0)
	for _, top := range ni.tops {
		if !top.push || top.readsLeft() > 0 {
			return 0 // (a pull, or a split put's READ, completes without a FIN)
		}
		n++
		bytes += top.ctsLen // (what the initiator writes: all, or a split put's first part)
		largest = max(largest, top.ctsLen)
	}
	if n == 0 {
		ni.pushHint.Store(false)
	}
	if n < 2 || len(ni.ops) > 0 || ni.queued.Load() > 0 {
		// (Operations of our own wait for answers, or CTSs, that must not wait a
		// nap; queued sends wait for room that frees without a completion.)
		return 0
	}
	d := time.Duration((bytes-largest)/pushNapRate) * time.Microsecond / 2
	if d < pushNapMin {
		return 0
	}
	return min(d, pushNapMax)
}

// handleFin completes a pushed long put at the target: its data is in place (or
// the initiator could not write it, fail set), so its events and answer go out as
// after a pull. Called from progress without ni.mu.
func (ni *NI) handleFin(pr *peer, h *header) {
	ni.mu.Lock()
	top := ni.tops[h.hdrData]
	if top == nil || top.pr != pr || !top.push || top.finDone {
		ni.status[SRMalformed].Add(1)
		ni.mu.Unlock()
		return
	}
	if h.fail != uint8(eq.NIOK) {
		top.fail = eq.NIUndeliverable
	}
	top.finDone = true
	if top.pending--; top.pending > 0 {
		ni.mu.Unlock() // (a split put: our READs of its second part complete it)
		return
	}
	delete(ni.tops, top.id)
	ni.completeTarget(top)
	ni.mu.Unlock()
	ni.sendAnswer(top)
}

// failPushTops completes, failed, the pushed long puts from pr that wait for its
// FIN: a failed peer writes nothing more. A split put whose READs are still out
// completes when they do (flushed, as a pull's). Called with ni.mu held.
func (ni *NI) failPushTops(pr *peer) {
	for id, top := range ni.tops {
		if top.pr == pr && top.push && !top.finDone {
			top.fail = eq.NIUndeliverable
			top.finDone = true
			if top.pending--; top.pending > 0 {
				continue
			}
			delete(ni.tops, id)
			ni.completeTarget(top)
		}
	}
}

// pushWriteRejected is flushQueue's report of a queued pushed-put WRITE that the
// provider rejected at post (not a failed peer): the FIN queued behind it goes out
// failed, so the target does not report data that never came. Called under
// ni.progMu, like flushQueue.
func (pr *peer) pushWriteRejected() {
	for i := range pr.queue {
		if q := &pr.queue[i]; !q.rdma && q.h.kind == msgFin {
			q.h.fail = uint8(eq.NIUndeliverable)
			return
		}
	}
}
