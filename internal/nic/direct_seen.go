package nic

import (
	"sync/atomic"
	"time"
)

// directSeen counts one request handled from pr's initiator (the target's half of
// write-after-write order). Called by the target's engine after it handled the
// request.
func (ni *NI) directSeen(pr *peer) {
	d := ni.direct
	if d == nil || pr.idx < 0 {
		return
	}
	if l := d.seen.Load(); l != nil && pr.idx < len(*l) && (*l)[pr.idx] != nil {
		(*l)[pr.idx].Add(1)
		return
	}
	d.seenMu.Lock()
	defer d.seenMu.Unlock()
	var cur []*atomic.Uint64
	if l := d.seen.Load(); l != nil {
		cur = *l
	}
	w := d.seenSlot(seenKey(pr.id), true)
	if w == nil {
		return // table full: that initiator never goes direct
	}
	n := max(len(cur), pr.idx+1)
	l := make([]*atomic.Uint64, n)
	copy(l, cur)
	l[pr.idx] = w
	d.seen.Store(&l)
	w.Add(1)
}

func seenKey(id ProcessID) uint64 { return uint64(id.NID)<<32 | uint64(id.PID) + 1 }

// seenSlotIn finds (or, with insert, claims) the slot of key in the table tab and
// returns its offset, or -1 (not there, or the table is full). The target and its
// initiators may claim slots at the same time: a claim is a compare-and-swap.
func seenSlotIn(tab []byte, key uint64, insert bool) int {
	nwin := int(u32At(tab, 8).Load())
	base := dtHeader + nwin*dtWinSize
	h := int((key * 0x9E3779B97F4A7C15) >> 55) // 9 bits
	for i := 0; i < dtSeenSlots; i++ {
		o := base + ((h+i)%dtSeenSlots)*dtSeenSize
		k := u64At(tab, o)
		for {
			v := k.Load()
			if v == key {
				return o
			}
			if v != 0 {
				break // someone else's: probe on
			}
			if !insert {
				return -1
			}
			if k.CompareAndSwap(0, key) {
				return o
			}
		}
	}
	return -1
}

func (d *directState) seenSlot(key uint64, insert bool) *atomic.Uint64 {
	o := seenSlotIn(d.tab, key, insert)
	if o < 0 {
		return nil
	}
	return u64At(d.tab, o+dtSeenCount)
}

// noticeLoop waits on the table's futex word and tells the counters that peers
// counted into from outside (Counter.Notice): their waiters wake and their triggers
// fire.
func (d *directState) noticeLoop(ni *NI) {
	defer d.wg.Done()
	word := u32At(d.tab, dtNotify)
	var cts []*CT
	var checked time.Time
	for {
		v := word.Load()
		cts = cts[:0]
		ni.mu.Lock()
		for i := range d.wins {
			if u32At(d.win(i), dtWinNotice).Swap(0) != 0 && d.wins[i].ct != nil {
				cts = append(cts, d.wins[i].ct)
			}
		}
		for _, c := range d.owed {
			if _, live := ni.cts[c]; live {
				cts = append(cts, c)
			}
		}
		clear(d.owed)
		d.owed = d.owed[:0]
		if now := time.Now(); now.Sub(checked) >= liveCheck {
			// The targets this NI acts on directly: one that died takes no more
			// direct access (its memory stays mapped here and would accept it).
			checked = now
			for _, p := range d.peers {
				if p != nil && p.rt != nil && !p.rt.dead.Load() && p.rt.exited() {
					p.rt.dead.Store(true)
				}
			}
		}
		ni.mu.Unlock()
		for _, c := range cts {
			c.c.Notice()
		}
		if len(cts) > 0 {
			ni.issueFired(false)
		}
		select {
		case <-d.stop:
			return
		default:
		}
		directWait(d.tab, v)
	}
}

// --- initiator side ---
