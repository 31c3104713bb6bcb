package me

// Entry describes a match entry (ME) or, on a table created without matching, a list entry
// (LE). It holds what matching needs; the buffer address, memory registration and
// counting-event handle stay with the engine, which refers to the entry by its Handle and
// UserPtr.
type Entry struct {
	// Length is the length of the entry's buffer in bytes (or the total of its iovec).
	Length uint64
	// UID is the user allowed to use the entry, or UIDAny.
	UID UID
	// Options are the entry's options.
	Options Options
	// MatchID is the initiator the entry accepts; NIDAny, PIDAny and RankAny are
	// wildcards. Not read for list entries.
	MatchID ProcessID
	// MatchBits and IgnoreBits: a message matches when
	// (msg ^ MatchBits) &^ IgnoreBits == 0. Not read for list entries.
	MatchBits, IgnoreBits uint64
	// MinFree unlinks a ManageLocal entry once Length minus its local offset falls below
	// MinFree; zero disables it. Read only with ManageLocal, as the specification says.
	MinFree uint64
	// UserPtr is the caller's value, returned in every event about the entry.
	UserPtr uint64
}

// Handle names an entry of one Table. The zero Handle names nothing. A handle goes stale
// when its entry is released (unlinked and unreferenced); a stale handle is reported as
// ErrUnknownHandle and never reaches a later entry that reuses the slot (a slot's
// generation counter is 32 bits: only a handle kept across 2^32 reuses of one slot could
// alias).
type Handle uint64

func makeHandle(idx int32, gen uint32) Handle { return Handle(uint64(gen)<<32 | uint64(idx+1)) }

func (h Handle) index() int32 { return int32(uint32(h)) - 1 }

func (h Handle) gen() uint32 { return uint32(h >> 32) }

// entry states.
const (
	stateFree     uint8 = iota // slot on the free list
	stateLinked                // in a list, can match
	stateDetached              // auto-unlinked overflow entry still referenced by headers; AUTO_FREE is due when pending reaches zero
)

const nilIdx int32 = -1

// criteria are what decides whether an entry accepts a message, laid out together.
type criteria struct {
	matchBits  uint64
	ignoreBits uint64
	length     uint64
	matchID    ProcessID
	options    Options
}

func criteriaOf(e *Entry) criteria {
	return criteria{matchBits: e.MatchBits, ignoreBits: e.IgnoreBits, length: e.Length, matchID: e.MatchID, options: e.Options}
}

// entry is the table's record of one entry, kept in an arena and linked by index. Its
// layout is deliberate: the first 64 bytes hold everything a match scan reads (criteria,
// local offset, sequence number, uid, next link); the rest is read only by the entry that
// wins. Entries are 128 bytes, so in a large (page-aligned) arena each entry is one
// aligned pair of cache lines.
type entry struct {
	criteria          // 40 bytes
	offset   uint64   // local offset (ManageLocal)
	seq      uint64   // link order, strictly increasing within a table
	uid      UID      // access control
	next     int32    // next in the entry's chain (hash bin or ordered list)
	userPtr  uint64   // second cache line
	minFree  uint64   //
	gen      uint32   // handle generation of the slot
	pending  int32    // unexpected headers whose data is in this entry's buffer
	prev     int32    // previous in the entry's chain
	state    uint8    //
	list     List     //
	hashed   bool     // chained in a hash bin rather than the ordered list
	_        [33]byte // pad to 128 bytes
}

// spec rebuilds the Entry the entry was appended with.
func (e *entry) spec() Entry {
	return Entry{Length: e.length, UID: e.uid, Options: e.options, MatchID: e.matchID,
		MatchBits: e.matchBits, IgnoreBits: e.ignoreBits, MinFree: e.minFree, UserPtr: e.userPtr}
}

// arena holds entries with a free list; slots are reused, so steady-state appends do not
// allocate.
type arena struct {
	e    []entry
	free []int32
	live int // slots not on the free list
}

func (a *arena) alloc() int32 {
	var i int32
	if n := len(a.free); n > 0 {
		i = a.free[n-1]
		a.free = a.free[:n-1]
	} else {
		a.e = append(a.e, entry{})
		i = int32(len(a.e) - 1)
	}
	a.live++
	return i
}

func (a *arena) release(i int32) {
	e := &a.e[i]
	*e = entry{gen: e.gen + 1, prev: nilIdx, next: nilIdx}
	a.free = append(a.free, i)
	a.live--
}

// lookup returns the index of the entry h names if it is not free.
func (a *arena) lookup(h Handle) (int32, bool) {
	i := h.index()
	if h == 0 || i < 0 || int(i) >= len(a.e) {
		return 0, false
	}
	e := &a.e[i]
	if e.state == stateFree || e.gen != h.gen() {
		return 0, false
	}
	return i, true
}
