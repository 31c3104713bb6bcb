package me

// NID is a node identifier of physical addressing.
type NID uint32

// PID is a process identifier of physical addressing.
type PID uint32

// Rank is a process identifier of logical addressing.
type Rank uint32

// UID is the user identifier that travels in the trusted part of a message header.
type UID uint32

// Wildcards of a match id and of an entry's access control.
const (
	// NIDAny in an entry's MatchID accepts every node (PTL_NID_ANY).
	NIDAny NID = 0xffff
	// PIDAny in an entry's MatchID accepts every process id (PTL_PID_ANY).
	PIDAny PID = 0xffff
	// RankAny in an entry's MatchID accepts every rank (PTL_RANK_ANY).
	RankAny Rank = ^Rank(0)
	// UIDAny as an entry's UID lets every user access the entry (PTL_UID_ANY).
	UIDAny UID = ^UID(0)
)

// ProcessID names a process. A table with physical addressing compares NID and PID;
// a table with logical addressing compares Rank only. The other fields are not read.
type ProcessID struct {
	NID  NID
	PID  PID
	Rank Rank
}

// Addressing selects which fields of a ProcessID a table compares.
type Addressing uint8

const (
	// Physical addressing compares NID and PID (PTL_NI_PHYSICAL).
	Physical Addressing = iota
	// Logical addressing compares Rank (PTL_NI_LOGICAL).
	Logical
)

// String returns the name of the addressing mode.
func (a Addressing) String() string {
	switch a {
	case Physical:
		return "physical"
	case Logical:
		return "logical"
	}
	return "invalid-addressing"
}

// acceptsSource reports whether an entry whose match id is want accepts a message from
// the initiator src under addressing mode a (wildcards included).
func acceptsSource(a Addressing, want, src ProcessID) bool {
	if a == Logical {
		return want.Rank == RankAny || want.Rank == src.Rank
	}
	return (want.NID == NIDAny || want.NID == src.NID) &&
		(want.PID == PIDAny || want.PID == src.PID)
}
