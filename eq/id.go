package eq

// NID is a node identifier of physical addressing (ptl_nid_t).
type NID uint32

// PID is a process identifier of physical addressing (ptl_pid_t).
type PID uint32

// Rank is a process identifier of logical addressing (ptl_rank_t).
type Rank uint32

// UID is the user identifier that travels in the trusted part of a message header
// (ptl_uid_t).
type UID uint32

// Wildcards and special values, with portals4.h's values.
const (
	// NIDAny accepts every node in a match id (PTL_NID_ANY).
	NIDAny NID = 0xffff
	// PIDAny accepts every process id in a match id, and asks NIInit for any free
	// pid (PTL_PID_ANY).
	PIDAny PID = 0xffff
	// RankAny accepts every rank in a match id (PTL_RANK_ANY).
	RankAny Rank = ^Rank(0)
	// UIDAny as an entry's UID lets every user access the entry (PTL_UID_ANY).
	UIDAny UID = ^UID(0)
)

// ProcessID names a process (ptl_process_t). Portals makes it a union: a logical
// network interface uses Rank, a physical one NID and PID; the other fields are zero
// in what the library reports and are not read in what it is given.
type ProcessID struct {
	NID  NID  // node identifier (physical addressing)
	PID  PID  // process identifier (physical addressing)
	Rank Rank // logical rank (logical addressing)
}
