// Package md owns memory descriptors: it binds plain []byte slices, iovecs and
// library-allocated regions, takes registrations from regcache lazily and hides them, so
// no key ever reaches a user.
//
// Three pieces:
//
//   - Memory is what a Portals MD, ME or LE binds: Bytes(b), Iovecs(list) (at most
//     MaxIovecs entries) or Allocation.Memory(). Offsets run across the whole iovec list;
//     ReadAt, WriteAt, Slices and Contiguous copy or expose any range of it,
//     bounds-checked (a *RangeError matching ErrOutOfRange, nothing copied), and allocate
//     nothing.
//   - Alloc maps page-aligned anonymous memory owned by the library. Its Free calls
//     driverhooks.Invalidate before munmap, so every pin cache drops its registrations of
//     the range before anyone can map new pages there.
//   - Registry (one per network interface: one protection domain and access set) pins
//     ranges of a Memory for the protocol engine through a regcache pin cache: Pin takes
//     one cache Acquire per contiguous piece and returns a Pinned, whose SGEs and Remote
//     give the local scatter-gather list and the remote segments for the peer's RDMA READ
//     or WRITE, split at MaxSGELength. Release gives the registrations back; they stay
//     cached until their pages change or the cache evicts them.
//
// Keys. Local and remote keys leave this package only through a Pinned, and only the
// protocol engine (package portals) holds Pinned values: nothing of md's API that a user
// sees (Memory, Allocation) carries a key or a registration.
//
// Lifetimes. While a Pinned is held, the Go memory behind it stays alive and in place
// even if the caller drops every other reference: the Pinned holds a real pointer to
// each piece. (The pin cache's entry references only the objects it was registered
// for; a piece of another object on the same pages is a cache hit that the entry alone
// would not keep alive.) Go does not move heap objects, and pages of live objects are
// never scavenged, so the registration stays coherent.
// Memory that is unmapped while pinned (Allocation.Free, or foreign memory the notifier
// sees go) keeps its registration valid until Release, which then deregisters it; the
// cache never hands it out again. Using a Memory after the memory it names is gone
// (after Free, or after foreign memory was unmapped) is the caller's error, as in C.
//
// Concurrency. Memory values are immutable and may be shared; the bytes they name are
// not synchronized. A Registry is safe for concurrent use; a Pinned belongs to one
// goroutine at a time, and its Release is atomic, so a double release is always reported
// (ErrNotPinned).
//
// md imports regcache, driverhooks and internal/verbs; it never imports portals.
package md
