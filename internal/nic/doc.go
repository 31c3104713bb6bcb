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
// # Network interfaces and identities
//
// NIInit is local. An NI is reachable by its physical id, (nid, pid), as soon as it
// exists: the nid is the node's (the IPv4 address of its first interface that is up
// and not a loopback, 127.0.0.1's value without one; a node is a kernel and a
// network interface namespace), the pid the one the process claimed on the node.
// Connections open on the first operation to a peer: the initiator sends a request
// with its queue pair's address to the target's process through the node-local
// rendezvous of the pid (an abstract unix socket on Linux, which the target's
// progress polls and a goroutine waits on), gets the target's back, and both
// connect. A target on another node, a pid nobody holds, or a process without an NI
// of that kind completes the operation with NI_UNDELIVERABLE.
//
// A logical NI addresses by rank through a map that SetMap sets once (a second
// SetMap is IGNORED; GetMap before any map is NO_SPACE). A client with its own
// launcher exchanges PhysID results out of band and calls SetMap; package job does
// that exchange for programs under cmd/ptlrun. In the engine, a process made over a Runtime
// exchanges physical ids with the job at its first NIInit (which is then
// collective) and starts its logical NIs with the job's map, which SetMap may still
// replace once.
//
// Memory: a descriptor or entry binds a []byte, an iovec list, or a raw address
// range (MDSpec.Addr and Length, up to all of memory). Raw memory is accessed only
// where a transfer touches it, under fault protection: an unmapped address fails
// that operation (md.ErrFault, or NI_SEGV in its events), never the process.
//
// Direct access (direct*.go, docs/direct.md): on a non-matching NI, an operation
// into a persistent list entry over md.Alloc memory of a process on the node, which
// would post no event there, is carried out by the initiator in the target's mapped
// memory, with the events and counts the target's answer would have caused.
//
// No key, queue pair or registration is ever visible: an MD or ME binds plain
// memory, and the engine registers what a transfer needs through the pin cache
// (package md over regcache), lazily.
//
// # The engine
//
// Each NI owns a verbs context with one reliable-connected queue pair per peer it
// talks to.
// A request travels as a SEND: a 92-byte header and, up to 932 bytes, the payload
// (eager). A larger put names the initiator's registered region instead; the target
// matches it (package me), names the entry's range back (CTS), into which the
// initiator writes the data with RDMA WRITE before its FIN (push.go; over shared
// memory the target reads the second half of a large one itself meanwhile, with
// RDMA READ; with PTL_LONG_PUT=pull or no progress goroutine the target pulls it
// all),
// and answers when done. A larger get is pushed with RDMA WRITE before the
// reply. Atomics are computed at the target under the NI's engine lock, element by
// element in host byte order (LONG_DOUBLE in C long double through cgo; not
// supported without cgo). Events go to event queues and counting events (package
// eq) in the reference's order: the communication event, then AUTO_UNLINK, then
// AUTO_FREE last; at the initiator SEND precedes ACK or REPLY.
//
// Progress: every call that waits or polls (EQ.Get, EQ.Wait, EQPoll, CT.Get,
// CT.Wait, CTPoll, MD.Release) drives the engine itself, including the rendezvous
// listener, so correctness never depends on a goroutine being scheduled (a process
// with GOMAXPROCS=1 that spins on EQ.Get completes everything). Blocking waits then
// sleep; one progress goroutine per NI completes one-sided operations when nobody
// calls in (a passive target), and steps aside while callers poll.
// PTL_PROGRESS_GOROUTINE=0 runs without it: the waits then never sleep. Triggered operations are queued when their
// counter reaches the threshold and started in firing order, inside the API call
// that released them (CTInc, CTSet, a triggered post past its threshold) or by
// whoever runs progress for releases the engine counted.
//
// Flow control: on a portal table entry with PTFlowCtrl, a message that finds no
// resources (no matching entry, full unexpected list, full event queue) disables the
// entry, posts PT_DISABLED, and the initiator's ACK carries NI_PT_DISABLED. A peer
// that dies completes its operations with NI_UNDELIVERABLE. Malformed messages are
// dropped and counted in the status registers (SRMalformed).
package nic
