package me

// binTable maps match bits to a hash bin (the chain of exact-match entries with those
// bits) with open addressing and linear probing. Each slot holds the key and the chain
// inline, so a lookup touches one slot (usually one cache line) before the entry itself:
// one dependent cache miss fewer than a Go map whose value leads to the chain.
//
// Bins that empty stay in the table (head == nilIdx) until a sweep rebuilds it; a slot
// that never held a key has head == slotFree. There are no deletions in place, so probing
// needs no tombstones.
type binTable struct {
	slots []binSlot // power-of-two length, or nil
	used  int       // slots holding a key (bins, empty or not)
}

type binSlot struct {
	key uint64
	chain
}

const slotFree int32 = -2

// minBinSlots is the table size of the first insertion.
const minBinSlots = 16

// hashBits mixes match bits (the splitmix64 finalizer): tags that differ only in high
// bits, or in a few low bits, spread over the whole table.
func hashBits(k uint64) uint64 {
	k ^= k >> 30
	k *= 0xbf58476d1ce4e5b9
	k ^= k >> 27
	k *= 0x94d049bb133111eb
	k ^= k >> 31
	return k
}

// lookup returns the slot of key, or nil.
func (b *binTable) lookup(key uint64) *binSlot {
	if b.slots == nil {
		return nil
	}
	mask := uint64(len(b.slots) - 1)
	for i := hashBits(key) & mask; ; i = (i + 1) & mask {
		s := &b.slots[i]
		if s.head == slotFree {
			return nil
		}
		if s.key == key {
			return s
		}
	}
}

// insert adds key, which must be absent, as an empty bin and returns its slot. It grows
// the table to keep the load at most 3/4; the returned pointer is valid until the next
// insert or rebuild.
func (b *binTable) insert(key uint64) *binSlot {
	if (b.used+1)*4 > len(b.slots)*3 {
		n := len(b.slots) * 2
		if n < minBinSlots {
			n = minBinSlots
		}
		b.rebuild(n)
	}
	b.used++
	return b.place(key, newChain())
}

// place stores key with chain c in its first free slot (the key must be absent and a free
// slot must exist).
func (b *binTable) place(key uint64, c chain) *binSlot {
	mask := uint64(len(b.slots) - 1)
	for i := hashBits(key) & mask; ; i = (i + 1) & mask {
		s := &b.slots[i]
		if s.head == slotFree {
			s.key, s.chain = key, c
			return s
		}
	}
}

// rebuild rehashes the non-empty bins into a table of n slots (a power of two), dropping
// empty bins.
func (b *binTable) rebuild(n int) {
	old := b.slots
	b.slots = make([]binSlot, n)
	for i := range b.slots {
		b.slots[i].head = slotFree
	}
	b.used = 0
	for i := range old {
		if s := &old[i]; s.head >= 0 {
			b.place(s.key, s.chain)
			b.used++
		}
	}
}

// sweep drops the empty bins, shrinking the table when the bins left fit a smaller one.
func (b *binTable) sweep(live int) {
	n := minBinSlots
	for (live+1)*4 > n*3 {
		n *= 2
	}
	if n > len(b.slots) {
		n = len(b.slots)
	}
	b.rebuild(n)
}

// len returns the number of bins held, empty ones included.
func (b *binTable) len() int { return b.used }
