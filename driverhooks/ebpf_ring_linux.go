//go:build linux

package driverhooks

import (
	"encoding/binary"
	"errors"
	"os"
	"sync/atomic"
)

// The eBPF backend's subscriptions and records: the kernel ring drained into
// the broadcast ring that every subscribed cache reads, and the calls in flight.

// seq loads the counter the programs bump: one atomic load from the mapped map.
func (b *EBPF) seq() uint64 { return atomic.LoadUint64(b.seqp) }

// attach registers a subscription; it starts after everything recorded so far.
func (b *EBPF) attach() (seq, head uint64, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed.Load() {
		return 0, 0, false
	}
	b.subs++
	seq = atomic.LoadUint64(b.seqp)
	b.pumpLocked()
	if len(b.calls) > 0 {
		seq ^= poisonSeq
	}
	return seq, b.head.Load(), true
}

// detach forgets a subscription.
func (b *EBPF) detach() {
	b.mu.Lock()
	b.subs--
	b.maybeFreeLocked()
	b.mu.Unlock()
}

// drain moves the kernel ring into the broadcast ring, then hands the ranges after
// *cursor to fn (without a lock: fn may call Unwatch). The counter is loaded first:
// each program commits its record before it bumps the counter, so every call counted
// in the returned value is in the ring by then.
func (b *EBPF) drain(cursor *uint64, fn func(start, end uintptr)) (seq uint64, all bool) {
	b.mu.Lock()
	seq = atomic.LoadUint64(b.seqp)
	if b.closed.Load() {
		*cursor = b.head.Load()
		b.mu.Unlock()
		return seq, true
	}
	b.pumpLocked()
	if len(b.calls) > 0 {
		// A call is in flight: its pages may still go after this drain, and a
		// registration made meanwhile would be of them. Stay pending, so that every
		// lookup drains (and sees the ranges again) until the call has returned.
		seq ^= poisonSeq
	}
	head := b.head.Load()
	b.mu.Unlock()
	c := *cursor
	if head-c > ebpfSlots {
		*cursor = head
		return seq, true
	}
	for ; c != head; c++ {
		sl := &b.slots[c&(ebpfSlots-1)]
		s1 := sl.seq.Load()
		start, end, flags := sl.start.Load(), sl.end.Load(), sl.flags.Load()
		if s2 := sl.seq.Load(); s1 != c+1 || s2 != c+1 {
			// Overwritten while we read: ranges were lost.
			*cursor = head
			return seq, true
		}
		if flags&recFlush != 0 {
			all = true
			continue
		}
		fn(uintptr(start), uintptr(end))
	}
	*cursor = c
	return seq, all
}

// pumpLocked reads every committed record of the kernel ring and publishes the
// watched ranges and the flushes, keeps the set of calls in flight (a call's entry
// record adds it, its exit record removes it) and publishes the ranges of every call
// still in flight again. The lost counter is loaded before the ring: a program bumps
// it before the sequence word, so a loss counted in a sequence value the caller
// loaded is seen here.
func (b *EBPF) pumpLocked() {
	lost := atomic.LoadUint64(b.lostp)
	if b.rd.AvailableBytes() > 0 {
		for {
			err := b.rd.ReadInto(&b.rec)
			if errors.Is(err, os.ErrDeadlineExceeded) {
				break
			}
			if err != nil || len(b.rec.RawSample) < ebpfRecordSize {
				// A ring we cannot parse any more: nothing it held can be trusted.
				b.publishLocked(0, 0, recFlush)
				break
			}
			b.records++
			raw := b.rec.RawSample
			u64 := func(off int) uint64 { return binary.NativeEndian.Uint64(raw[off:]) }
			flags := binary.NativeEndian.Uint32(raw[recOp+4:])
			call := ebpfCall{r: [2]span{{uintptr(u64(0)), uintptr(u64(8))}, {uintptr(u64(16)), uintptr(u64(24))}}, flush: flags&recFlush != 0}
			switch tid := u64(recTid); {
			case flags&recExit != 0:
				delete(b.calls, tid)
			case flags&recUntracked == 0:
				b.calls[tid] = call
			}
			b.publishCallLocked(call)
		}
	}
	if lost != b.lostSeen {
		b.lostSeen = lost
		b.publishLocked(0, 0, recFlush)
		b.reconcileLocked()
	}
	for _, c := range b.calls {
		b.publishCallLocked(c)
	}
}

// publishCallLocked publishes the watched ranges of a call, or a flush.
func (b *EBPF) publishCallLocked(c ebpfCall) {
	if c.flush {
		b.publishLocked(0, 0, recFlush)
		return
	}
	for _, r := range c.r {
		start, end := pageSpan(uint64(r.start), uint64(r.end))
		if start < end && b.watchedLocked(start, end) {
			b.publishLocked(start, end, 0)
		}
	}
}

// reconcileLocked rebuilds the calls in flight from the kernel's in-flight map after
// records were lost (an exit record lost would leave its call in flight for good).
func (b *EBPF) reconcileLocked() {
	clear(b.calls)
	var (
		tid uint64
		v   [ebpfInflightSize]byte
	)
	it := b.inflight.Iterate()
	for it.Next(&tid, &v) {
		u64 := func(off int) uint64 { return binary.NativeEndian.Uint64(v[off:]) }
		flags := binary.NativeEndian.Uint32(v[36:])
		if flags&recSilent != 0 {
			continue
		}
		b.calls[tid] = ebpfCall{r: [2]span{{uintptr(u64(0)), uintptr(u64(8))}, {uintptr(u64(16)), uintptr(u64(24))}}, flush: flags&recFlush != 0}
	}
	if it.Err() != nil {
		// Unknown calls in flight: a flush now, and the exit records will follow.
		b.publishLocked(0, 0, recFlush)
	}
}

// pageSpan widens [start, end) to whole pages; an end that wrapped around means the
// top of the address space.
func pageSpan(start, end uint64) (uint64, uint64) {
	ps := uint64(pageSize)
	if end < start {
		end = ^uint64(0)
	}
	start &^= ps - 1
	if e := (end + ps - 1) &^ (ps - 1); e >= end {
		end = e
	} else {
		end = ^uint64(0) &^ (ps - 1)
	}
	return start, end
}

// watchedLocked reports whether [start, end) overlaps a watched range.
func (b *EBPF) watchedLocked(start, end uint64) bool {
	hit := false
	b.watched.t.DescendLessOrEqual(seg{start: uintptr(start)}, func(s seg) bool {
		hit = uint64(s.end) > start
		return false
	})
	if hit {
		return true
	}
	b.watched.t.AscendRange(seg{start: uintptr(start)}, seg{start: uintptr(end)}, func(s seg) bool {
		hit = true
		return false
	})
	return hit
}

func (b *EBPF) publishLocked(start, end uint64, flags uint64) {
	if flags&recFlush != 0 {
		b.flushes++
	}
	h := b.head.Load()
	sl := &b.slots[h&(ebpfSlots-1)]
	sl.seq.Store(0)
	sl.start.Store(start)
	sl.end.Store(end)
	sl.flags.Store(flags)
	sl.seq.Store(h + 1)
	b.head.Store(h + 1)
}
