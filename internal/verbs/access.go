package verbs

import "strings"

// Access is the set of rights a memory region grants, like ibv_access_flags.
// Local read is always granted.
type Access uint32

const (
	// AccessLocalWrite lets local work requests (RECV, RDMA READ responses,
	// atomic results) write into the region.
	AccessLocalWrite Access = 1 << iota
	// AccessRemoteWrite lets a peer RDMA WRITE into the region. Requires AccessLocalWrite.
	AccessRemoteWrite
	// AccessRemoteRead lets a peer RDMA READ from the region.
	AccessRemoteRead
	// AccessRemoteAtomic lets a peer run atomic operations on the region.
	// Requires AccessLocalWrite.
	AccessRemoteAtomic
)

// accessAll is every defined flag; anything outside it is invalid.
const accessAll = AccessLocalWrite | AccessRemoteWrite | AccessRemoteRead | AccessRemoteAtomic

// Validate reports whether a is a legal combination, with the ibverbs rule that
// remote write and remote atomic need local write. The error is ErrInvalidArgument
// itself, for the caller to wrap.
func (a Access) Validate() error {
	if a&^accessAll != 0 {
		return ErrInvalidArgument
	}
	if a&(AccessRemoteWrite|AccessRemoteAtomic) != 0 && a&AccessLocalWrite == 0 {
		return ErrInvalidArgument
	}
	return nil
}

// String lists the flags, e.g. "local-write|remote-read".
func (a Access) String() string {
	if a == 0 {
		return "local-read"
	}
	var parts []string
	names := []string{"local-write", "remote-write", "remote-read", "remote-atomic"}
	for i, n := range names {
		if a&(1<<i) != 0 {
			parts = append(parts, n)
		}
	}
	if rest := a &^ accessAll; rest != 0 {
		parts = append(parts, "unknown")
	}
	return strings.Join(parts, "|")
}
