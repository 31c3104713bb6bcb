// Package driverhooks is the notifier channel that keeps the pin cache coherent: a
// userfaultfd monitor that learns of munmap, mremap, MAP_FIXED and madvise before they
// return, explicit invalidation hooks, the invalidated flag checked by every lookup, and
// the page-frame oracle used to prove there are no stale hits.
//
// Monitor (Linux with cgo) opens a userfaultfd with UFFD_USER_MODE_ONLY, O_CLOEXEC and
// O_NONBLOCK, asks for the UNMAP, REMOVE and REMAP events and registers watched ranges
// in write-protect mode only, so faults have no side effects. Its events are read by a
// C pthread that never enters Go (a Go reader deadlocks under GOMAXPROCS=1, because
// the scavenger's madvise holds the only P while it waits for the read). The reader
// follows the sequence protocol of design.md section 2: poll, seq odd, read, publish
// the ranges into a lock-free broadcast ring in C memory, seq even. A subscription that
// falls behind the ring, or a monitor that closes, makes the subscribers flush
// everything. The reader runs until Close, which unregisters every range first.
//
// Notifier joins the monitor (which may be absent) with explicit invalidations
// (Invalidate) and hands both to Subscriptions; a pin cache holds one, checks Pending
// on every lookup (no lock, no allocation) and Drains under its own lock, so
// deregistration never happens inside the notifier. Default is the process-wide
// notifier: one monitor per process, since the kernel lets one userfaultfd own a range.
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
// driverhooks imports nothing of goportals.
package driverhooks
