// Package loopback is an in-process verbs provider: a fake behind the verbs interface,
// in the manner of wireguard-go's conn/bindtest, so that the layers above (pin cache,
// matching, the Portals engine) can be unit-tested, raced and fuzzed inside one process.
//
// The provider registers itself as "loopback" with one device, "loop0". Queue pairs
// connect to queue pairs of any context in the same process; an Address is an opaque
// byte string naming a process-wide random identifier. Memory registration pins nothing
// (Go memory stays referenced by the region) but keys, bounds, protection domains and
// access rights are checked exactly as a real HCA would.
//
// Semantics, ibverbs-like, RC transport:
//
//   - Work requests execute when posted (on the poster's goroutine, under a process-wide
//     lock that plays the wire) or, when they must wait, as soon as what they wait for
//     happens: a SEND or RDMA WRITE with immediate waits (infinite RNR retry) until the
//     peer posts a receive, and anything posted before the peer connected waits until it
//     connects. Results are visible only through completion queues. Order on a queue pair
//     is preserved: a waiting request holds back the ones behind it.
//   - Keys carry a 16-bit slot index and a 16-bit salted generation; a deregistered key is
//     never honoured again (a slot is retired rather than reused once its generation would
//     wrap). Local and remote keys of one region differ.
//   - Remote errors (bad or deregistered rkey, out of bounds, missing right) complete with
//     StatusRemoteAccessError and change no target byte. A SEND longer than the receive
//     buffers completes the receive with StatusLocalLengthError and the send with
//     StatusRemoteInvalidRequest (as mlx5 hardware and the IBA class C rules do); a
//     receive whose SGEs are invalid completes with StatusLocalProtectionError and the
//     send with StatusRemoteOperationError. Misaligned atomics give
//     StatusRemoteInvalidRequest. In all these cases both queue pairs enter the error state.
//   - Local errors (unknown lkey, SGE outside its region, region of another protection
//     domain, missing local write) give StatusLocalProtectionError; a transfer above
//     MaxMsgSize gives StatusLocalLengthError.
//   - After an error a queue pair is in QPError: its queued and later-posted work completes
//     with StatusWorkRequestFlushed (all requests, signaled or not).
//   - When a queue pair closes (or its context does), or enters the error state because of
//     a local fault, its peer has lost its partner: the peer's next send completes with
//     StatusRetryExceeded, its receives are flushed, and it enters the error state at once
//     if it has any work outstanding, so nothing waits for ever.
//   - Queue depths count like ibverbs: a send slot is freed when a completion of that or a
//     later send of the queue pair is polled, so unsignaled sends need a signaled one now
//     and then. PostSend returns ErrNoResources when the queue is full.
//   - A completion queue holds exactly the entries asked for. Overrunning it is fatal as in
//     ibverbs: the completions that did not fit are lost, Poll and Wait report a
//     verbs.ErrNoResources error once the queue is drained, and every queue pair using it
//     enters the error state.
//   - Atomics operate on host-endian 8-byte words, 8-byte aligned, and return the old
//     value host-endian into the local SGE.
//
// The provider starts no goroutines. It must never import goportals packages other than
// internal/verbs.
package loopback
