// Package rma is goportals' one-sided layer for the common case, shaped like
// MPI's RMA windows and UCX's put/get: each rank of a job exposes a piece of its
// memory, and any rank reads, writes and atomically updates any other rank's piece
// by rank and byte offset, with no match bits, portal indexes, descriptors or
// event queues in sight.
//
//	w, err := rma.Open(ctx, mem)                  // collective: every rank exposes its mem
//	defer w.Close(ctx)
//	err = w.WriteAt(ctx, peer, data, 64)          // data is at peer's mem[64:] on return
//	err = w.ReadAt(ctx, peer, buf, 0)             // buf holds peer's mem[:len(buf)]
//	old, err := rma.FetchAdd(ctx, w, peer, 0, uint64(1))
//	err = w.Put(peer, data, 0)                    // started; data stays unchanged until
//	err = w.Flush(ctx)                            // every Put before Flush is complete
//
// # Jobs
//
// A program runs as several processes (ranks) started by a launcher, cmd/ptlrun
// (go run ./cmd/ptlrun -np 2 prog); the first Open of a process joins the job and
// learns its rank and the job's size (Window.Rank, Window.Size). A process started
// alone is rank 0 of 1, and every call works on its own memory. Open, Barrier and
// Close are collective: every rank calls them, in the same order. Open returns
// only when every rank's memory is exposed, so an operation never arrives before
// its target is ready; no user code handles readiness. Once joined, a process
// stays in the job until it exits (the launcher admits each rank once); closing
// its last window releases the network interface, and a later Open sets up a new
// one with the same ranks.
//
// # Completion and buffer reuse
//
// WriteAt, ReadAt and the atomics (FetchAdd, CompareAndSwap, Swap) return when the
// operation is complete: the data is at the target, or here; their buffers are
// free at once. Put only starts the write: its buffer must stay unchanged until a
// later Flush (or Barrier, or Close) returns, which completes every Put started
// before it at its target and reports the failures. Barrier also orders the
// ranks' own loads and stores: after it, each rank sees in Bytes what others
// wrote before it. Puts and gets to the same bytes are not ordered with each
// other or with atomics unless a completion separates them.
//
// # Errors
//
// Every error is an *Error naming the call, the rank and bytes it addressed, a
// Portals code and a cause: ErrBadRank, ErrOutOfRange, ErrMisaligned, ErrClosed
// (all portals.ArgInvalid and found before anything is sent), a *RemoteError
// (portals.Fail: the target refused the operation or could not be reached), an
// error of package portals, or the context's error. Every blocking call takes a
// context and gives up when it ends.
//
// # How it maps onto Portals
//
// All windows live on one non-matching, logically addressed network interface of
// the process (portals.NINoMatching|portals.NILogical), which rma owns: each
// window takes the lowest free portal table index (the same on every rank, since
// windows are opened in the same order). The job itself (rank, size, the logical
// map when the launcher did not give the interface one, and the collectives of
// Open, Barrier and Close) comes from package job, so a program may use package
// job beside rma. A window is one persistent list entry over the exposed memory that
// accepts puts, gets and atomics and counts each arrival on a counting event
// (Window.Arrivals). Open exchanges the ranks' window lengths, so an access
// outside a target's memory is refused here, before anything is sent. Blocking calls wait on an event queue of
// their own; Put counts acknowledgments on the window's counting event, and Flush
// waits for the count. The atomics take their Portals datatype from the Go type.
//
// rma imports packages portals and job only; it never reaches into the engine.
package rma
