package loopback

import (
	"crypto/rand"
	"encoding/binary"

	"github.com/goportals/goportals/internal/verbs"
)

// Memory keys: the low 16 bits index a slot of the context's key table, the high 16 bits
// are the slot's generation XOR a random per-slot salt (a different salt for local and
// remote keys). A slot's generation advances at every deregistration and the slot is
// retired for good before the generation wraps, so a key once deregistered never matches
// again; the salts make a live key hard to guess from another one.
const (
	slotBits = 16
	slotMask = 1<<slotBits - 1
	maxSlots = 1 << slotBits
)

// keySlot is one entry of a key table.
type keySlot struct {
	mr           *mr
	gen          uint16
	lsalt, rsalt uint16
}

// keyTable maps keys to regions for one context. Guarded by wire.mu.
type keyTable struct {
	slots []keySlot
	free  []int // indices of empty, reusable slots
	live  int
}

func newKeyTable() keyTable { return keyTable{} }

// insert assigns keys to m and records it.
func (t *keyTable) insert(m *mr) error {
	var idx int
	if n := len(t.free); n > 0 {
		idx = t.free[n-1]
		t.free = t.free[:n-1]
	} else {
		if len(t.slots) >= maxSlots {
			return verbs.Errorf("reg mr", verbs.ErrNoResources, errKeysExhausted)
		}
		var b [4]byte
		_, _ = rand.Read(b[:])
		ls := binary.LittleEndian.Uint16(b[:])
		rs := binary.LittleEndian.Uint16(b[2:])
		if rs == ls {
			rs ^= 0x5a5a
		}
		t.slots = append(t.slots, keySlot{gen: 1, lsalt: ls, rsalt: rs})
		idx = len(t.slots) - 1
	}
	s := &t.slots[idx]
	s.mr = m
	m.slot = idx
	m.lkey = uint32(s.gen^s.lsalt)<<slotBits | uint32(idx)
	m.rkey = uint32(s.gen^s.rsalt)<<slotBits | uint32(idx)
	t.live++
	return nil
}

// remove forgets m and invalidates its keys for ever.
func (t *keyTable) remove(m *mr) {
	s := &t.slots[m.slot]
	if s.mr != m {
		return
	}
	s.mr = nil
	s.gen++
	t.live--
	if s.gen != 0 { // a wrapped generation would make old keys valid again: retire the slot
		t.free = append(t.free, m.slot)
	}
}

// byLKey returns the region whose local key is key, or nil.
func (t *keyTable) byLKey(key uint32) *mr {
	idx := int(key & slotMask)
	if idx >= len(t.slots) {
		return nil
	}
	s := &t.slots[idx]
	if s.mr == nil || uint16(key>>slotBits) != s.gen^s.lsalt {
		return nil
	}
	return s.mr
}

// byRKey returns the region whose remote key is key, or nil.
func (t *keyTable) byRKey(key uint32) *mr {
	idx := int(key & slotMask)
	if idx >= len(t.slots) {
		return nil
	}
	s := &t.slots[idx]
	if s.mr == nil || uint16(key>>slotBits) != s.gen^s.rsalt {
		return nil
	}
	return s.mr
}

// each calls f for every live region.
func (t *keyTable) each(f func(*mr)) {
	for i := range t.slots {
		if m := t.slots[i].mr; m != nil {
			f(m)
		}
	}
}
