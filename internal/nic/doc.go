// Package nic is goportals' software NIC: the protocol engine under the public
// package portals. It owns the network interfaces and everything bound to them
// (portal table, descriptors, entries, event queues, counters), the peers and
// their queue pairs, the wire format, target processing, atomic arithmetic and
// the trigger runner. Package portals is the API over it and package portals/ptl
// the 1:1 mirror of portals4.h; neither reaches below this package's exported
// calls, whose names and arguments follow portals4.h (PTIndex-addressed portal
// table entries, positional operation arguments).
//
// The engine's calls return *ptlerr.OpError values whose Errno is a PTL_* code
// (ArgInvalid, NoInit, InUse, ...). Blocking waits take a context.Context.
//
// No key, queue pair or registration is ever visible: an MD or ME binds plain
// memory, and the engine registers what a transfer needs through the pin cache
// (package md over regcache), lazily.
//
// # The engine
//
// Each NI owns a verbs context with one reliable-connected queue pair per rank.
// A request travels as a SEND: a 92-byte header and, up to 932 bytes, the payload
// (eager). A larger put names the initiator's registered region instead; the target
// matches it (package me), pulls the data with RDMA READ straight into the entry's
// memory and answers when done. A larger get is pushed with RDMA WRITE before the
// reply. Atomics are computed at the target under the NI's engine lock, element by
// element in host byte order (LONG_DOUBLE in C long double through cgo; not
// supported without cgo). Events go to event queues and counting events (package
// eq) in the reference's order: the communication event, then AUTO_UNLINK, then
// AUTO_FREE last; at the initiator SEND precedes ACK or REPLY.
//
// Progress: a caller waiting on an event queue or a counter drives the engine
// itself for a while (no goroutine hand-off on the fast path), then sleeps; one
// progress goroutine per NI completes one-sided operations when nobody waits, and
// steps aside while callers poll. Triggered operations are queued when their
// counter reaches the threshold and started in firing order, inside the API call
// that released them (CTInc, CTSet, a triggered post past its threshold) or by
// whoever runs progress for releases the engine counted.
//
// Flow control: on a portal table entry with PTFlowCtrl, a message that finds no
// resources (no matching entry, full unexpected list, full event queue) disables the
// entry, posts PT_DISABLED, and the initiator's ACK carries NI_PT_DISABLED. A peer
// that dies completes its operations with NI_UNDELIVERABLE. Malformed messages are
// dropped and counted in the status registers (SRMalformed).
//
// Only shmem, tests, cmd and examples import this package.
package nic
