// Package shmem is an OpenSHMEM-style PGAS library on goportals: a job of PEs
// (processes started by ptlrun or another launcher), each exposing a symmetric
// heap that every other PE reads and writes with one-sided puts, gets and
// atomics.
//
// # Model
//
// Init joins the job and returns the World: MyPE, NPEs, the default context
// and the collective calls. Malloc, Calloc and Align allocate a symmetric
// array, a Sym[T], collectively: the same offset on every PE, so a Sym names
// the object everywhere; Sym.Local is this PE's copy. RMA (Put, Get, P, G,
// IPut, IGet, PutNBI, GetNBI, PutSignal) and atomics (AtomicFetchAdd,
// AtomicCompareSwap, ... on 32- and 64-bit integers) are generic functions
// over the element type, taking the context they run on: Go has no type
// parameters on methods, and the element type fixes the wire datatype, so no
// call takes a datatype argument. Ctx.Quiet completes a context's operations;
// CtxCreate makes independent contexts whose quiet waits only for their own.
// WaitUntil and Test watch local words that other PEs update; BarrierAll,
// SyncAll, Broadcast, Collect, FCollect, Alltoall and the reductions (AndReduce
// ... ProdReduce) are collectives over all PEs; SetLock, TestLock and ClearLock
// are distributed locks on atomics.
//
// Errors are *OpError values naming the OpenSHMEM call and wrapping ErrInvalidPE,
// ErrOutOfRange, ErrInvalidArg, ErrNoSpace, ErrRemote, ErrNotHeld, ErrClosed or
// the transport's error; match them with errors.Is. Every call that can block
// takes a context.Context and returns its error when it ends.
//
// # Mapping onto Portals
//
// As Sandia OpenSHMEM's Portals 4 transport does: one non-matching, logically
// addressed network interface; one portal table entry with one persistent list
// entry over the whole symmetric heap (puts and gets allowed, link and success
// events disabled, operations counted on a target counter that waits sleep
// on); a remote address is an offset in the heap; per context, counted ACKs of
// puts on one counter and counted replies of gets and fetching atomics on
// another, and quiet waits for both to reach the number issued, failing when a
// failure was counted. Small puts and atomic operands go through a volatile
// descriptor, so they return at once. Unlike SOS, non-fetching atomics ask for
// no acknowledgment: quiet completes them with a one-word get from each PE
// that received some (the engine answers an initiator's requests in order).
// A context bounds the operations it has in flight; past the bound the
// issuing goroutine waits, running the engine itself. A wait for a word
// (WaitUntil, barriers) runs the engine itself for its first millisecond, then
// naps between looks, so a PE that waits long leaves its core to the PEs that
// work (the NI's progress goroutine serves the network meanwhile). Without
// progress goroutines (PTL_PROGRESS_GOROUTINE=0 when the process starts) waits
// never nap, and Test and its variants run a progress round on each call. A
// wait that another goroutine's Close overtakes returns ErrClosed. Symmetric globals
// (NewGlobal) stand in for OpenSHMEM's symmetric data segment. All use of
// package portals and of the job runtime is in transport.go and domain.go.
//
// # Not implemented
//
// Teams (every collective runs over all PEs), non-blocking and floating-point
// atomics, shmem_ptr, the strided collectives (alltoalls) and the active-set
// forms of the older API; context options are accepted and recorded but every
// context is safe for concurrent use.
//
// This package imports portals and job (in transport.go and domain.go
// only); nothing in the module below it imports shmem.
package shmem
