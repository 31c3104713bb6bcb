// Package driverhooks is the notifier channel that keeps the pin cache coherent: a
// kernel backend that learns of munmap, mremap, MAP_FIXED mmap, page-dropping madvise
// and brk before they return, explicit invalidation hooks, the invalidated flag checked
// by every lookup, and the page-frame oracle used to prove there are no stale hits.
//
// # Backends
//
// A Backend publishes invalidated ranges into a broadcast ring and moves a sequence
// word when it records one; Subscription.Pending compares that word (one load) and
// Drain hands the ranges over. PTL_NOTIFIER selects the backend: auto (ebpf, else
// uffd), ebpf, seccomp (only by name: its filter is one-way and inherited), uffd or
// explicit. Each
// states its guarantee (Notifier.Guarantee):
//
//   - ebpf: programs on the syscall-entry tracepoints record the range and move the
//     counter in the unmapping thread before the call does anything, and keep the
//     call in flight until a sys_exit program records it again, so a lookup during
//     the call cannot re-register the old pages for good. No window. Needs CAP_BPF
//     and CAP_PERFMON. Detaching the programs at Close waits for a grace period per
//     tracepoint (about half a second in all).
//   - seccomp: a user-notification filter on every thread stops the calls; a C
//     supervisor thread makes the call itself, publishes the range once the pages are
//     gone and only then lets the caller go on. No window, no privileges, a round trip
//     per unmapping call; the filter cannot be removed and is inherited by children.
//   - uffd: userfaultfd events on watched ranges (below). REMOVE comes before the
//     pages go, but UNMAP only after munmap released the range: a window in which
//     another thread that maps new memory at the address can be handed a stale entry.
//   - explicit: no kernel channel; nothing is watched and the cache registers per
//     operation, apart from what Invalidate reports.
//
// Monitor (Linux with cgo) opens a userfaultfd with UFFD_USER_MODE_ONLY, O_CLOEXEC and
// O_NONBLOCK, asks for the UNMAP, REMOVE and REMAP events and registers watched ranges
// in write-protect mode only, so faults have no side effects. Its events are read by a
// C pthread that never enters Go (a Go reader deadlocks under GOMAXPROCS=1, because
// the scavenger's madvise holds the only P while it waits for the read). The reader
// follows the sequence protocol: poll, seq odd, read, publish
// the ranges into a lock-free broadcast ring in C memory, seq even. A subscription that
// falls behind the ring, or a monitor that closes, makes the subscribers flush
// everything. The reader runs until Close, which unregisters every range first.
//
// Notifier joins the backend (which may be absent) with explicit invalidations
// (Invalidate) and hands both to Subscriptions; a pin cache holds one, checks Pending
// on every lookup (no lock, no allocation) and Drains under its own lock, so
// deregistration never happens inside the notifier. Default is the process-wide
// notifier: one backend per process (the kernel lets one userfaultfd own a range, and
// a seccomp filter is process-wide).
//
// Capabilities are probed, never assumed: no cgo (ErrNoCgo), userfaultfd refused
// (ErrPermission), no kernel support (ErrNoKernel), a range owned by another monitor
// (ErrBusy) or a file-backed or special mapping (ErrUnwatchable) all match
// ErrNotSupported, and the cache then registers that memory per operation.
//
// PFNOracle reads /proc/self/pagemap (frame numbers need CAP_SYS_ADMIN): with
// PTL_CHECK_PFN=1 the cache records page frames at registration and compares them on
// every hit; a mismatch is a stale hit.
//
// driverhooks imports nothing of goportals but internal/envknob, through which it
// reads its environment variables.
package driverhooks
