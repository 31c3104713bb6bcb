package me

import "github.com/goportals/goportals/eq"

// The identity types are eq's (one definition across the module).
type (
	// NID is a node identifier of physical addressing.
	NID = eq.NID
	// PID is a process identifier of physical addressing.
	PID = eq.PID
	// Rank is a process identifier of logical addressing.
	Rank = eq.Rank
	// UID is the user identifier that travels in the trusted part of a message header.
	UID = eq.UID
	// ProcessID names a process. A table with physical addressing compares NID and PID;
	// a table with logical addressing compares Rank only. The other fields are not read.
	ProcessID = eq.ProcessID
)

// Wildcards of a match id and of an entry's access control (eq's constants).
const (
	NIDAny  = eq.NIDAny  // PTL_NID_ANY
	PIDAny  = eq.PIDAny  // PTL_PID_ANY
	RankAny = eq.RankAny // PTL_RANK_ANY
	UIDAny  = eq.UIDAny  // PTL_UID_ANY
)

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
