// Package portals is goportals' public API: a Portals-4-style one-sided interface
// for Go. A process binds plain memory to memory descriptors (MD) and exposes
// memory through match entries (ME, on a matching NI) or list entries (LE) on
// portal table entries (PT); other processes put into it, get from it and apply
// atomics to it, and both sides learn of completions through event queues (EQ)
// and counting events (CT). No key, queue pair or registration is ever visible:
// the library registers what a transfer needs through a pin cache that a driver
// notifier keeps coherent when memory is freed or remapped.
//
// # Shape of the API
//
// Handles are pointers (*NI, *PT, *MD, *ME, *EQ, *CT) compared with ==.
// Operations are methods of a Span, a byte range of an MD, aimed at a Target
// (process, portal index, match bits, remote offset); optional parts
// (acknowledgment, header data, a cookie returned in the events, a trigger
// counter and threshold) go in an OpOptions value, so the fast path allocates
// nothing:
//
//	s := md.Span(0, 8)
//	err := s.Put(portals.Target{ID: peer, PT: 4, Match: 0x42}, portals.OpOptions{Ack: portals.AckReqFull})
//
// Triggered operations are the same calls with OpOptions.Trigger set. Typed
// atomics (AtomicOf, FetchAtomicOf, SwapOf) take the datatype from a Go type
// parameter. Calls that wait take a context.Context and hide no timeout;
// EQ.Events iterates over events.
//
// Every error is an *OpError whose Errno is a PTL_* code with portals4.h's value
// (errors.Is(err, portals.ArgInvalid)); ErrNotSupported marks what the library
// does not provide.
//
// # Network interfaces
//
// NIInit brings up a network interface in this process alone; a physical NI is
// reachable by its physical id (node id, process id) from PhysID, and a logical
// NI addresses processes by rank through the map given to SetMap. Package job
// builds that map for programs started by ptlrun or a PMI launcher; package
// portals/ptl is the 1:1 mirror of portals4.h's functions, for ports of C code.
//
// # Buffer reuse
//
// The memory of a span given to Put or Atomic must not change until the
// operation's EventSend (or the descriptor's counter) reports it, unless the
// descriptor is MDVolatile and the put is at most Limits.MaxVolatileSize; memory
// given to Get or as a fetch result is written until EventReply. Memory exposed
// by an entry may be read or written by peers for as long as the entry is linked.
package portals
