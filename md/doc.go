// Package md owns the memory of memory descriptors: plain []byte slices, iovecs,
// raw address ranges and library-allocated regions. The engine registers it lazily
// through the pin cache (its internal registry over regcache), so no key ever
// reaches a user.
//
// The pieces:
//
//   - Memory is what a Portals MD, ME or LE binds: Bytes(b), Iovecs(list) (at most
//     MaxIovecs entries) or Allocation.Memory(). Offsets run across the whole iovec list;
//     ReadAt, WriteAt, Slices and Contiguous copy or expose any range of it,
//     bounds-checked (a *RangeError matching ErrOutOfRange, nothing copied), and allocate
//     nothing.
//   - Alloc maps page-aligned memory owned by the library: on Linux a shared mapping of
//     a memfd, which LookupBacking names so that the engine can let processes of the node
//     map the same pages (direct access). Its Free runs the OnFree hooks (the engine
//     revokes that access), then calls driverhooks.Invalidate before munmap, so every pin
//     cache drops its registrations of the range before anyone can map new pages there.
//   - The engine's registry (one per network interface: one protection domain and
//     access set) pins ranges of a Memory through a regcache pin cache, one cache
//     Acquire per contiguous piece of Memory.Slices, and gives the registrations back
//     after the transfer; they stay cached until their pages change or the cache
//     evicts them.
//
// Keys. Nothing of md's API carries a key or a registration.
//
// Lifetimes. While the engine holds a pin, the Go memory behind it stays alive and in place
// even if the caller drops every other reference: the pin holds a real pointer to
// each piece. (The pin cache's entry references only the objects it was registered
// for; a piece of another object on the same pages is a cache hit that the entry alone
// would not keep alive.) Go does not move heap objects, and pages of live objects are
// never scavenged, so the registration stays coherent.
// Memory that is unmapped while pinned (Allocation.Free, or foreign memory the notifier
// sees go) keeps its registration valid until the pin is released, which then deregisters it; the
// cache never hands it out again. Using a Memory after the memory it names is gone
// (after Free, or after foreign memory was unmapped) is the caller's error, as in C.
//
// Concurrency. Memory values are immutable and may be shared; the bytes they name are
// not synchronized. The registry errors (ErrClosed, ErrBusy, ErrNotPinned,
// ErrPinnedInUse) are defined here so errors.Is matches them wherever they arise.
//
// md imports regcache, driverhooks and internal/verbs; it never imports portals.
package md
