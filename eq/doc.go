// Package eq owns event queues, counting events and the trigger lists that fire
// operations when a counter reaches a threshold.
//
// eq is pure logic: no verbs, no goroutines beyond what blocking waits need. It never
// imports portals.
//
// # What the engine calls
//
//   - [Event] is the full Portals 4 event record (ptl_event_t). [EventKind], [List],
//     [NIFail], [AtomicOp] and [AtomicType] are its enumerations; their String methods
//     return the identifiers of portals4.h and the Parse functions accept those names or
//     the short names of the reference's conformance scripts.
//   - [Queue] is an event queue: a bounded ring. [Queue.Post] never blocks: when the
//     ring is full the oldest event is overwritten (Portals: "older events will be
//     overwritten by new ones") and the next event the consumer obtains comes with
//     [ErrEQDropped], as PtlEQGet returns PTL_EQ_DROPPED. [Queue.Get] does not block
//     ([ErrEQEmpty]); [Queue.Wait] and [Poll] block until an event, the context's end or
//     [Queue.Free] (then [ErrInterrupted]).
//   - [Counter] is a counting event (ptl_ct_event_t): [Counter.Get], [Counter.Set],
//     [Counter.Inc], [Counter.Wait], [PollCounters], [Counter.CancelTriggered] and
//     [Counter.Free]. [Counter.AddTrigger] registers a [Trigger] that fires exactly once
//     when success+failure reaches its threshold, in threshold order.
//
// # Concurrency contract
//
// Every method of [Queue] and [Counter] is safe to call from any goroutine at any time,
// including concurrently with [Queue.Free] and [Counter.Free]; each object guards its
// state with its own mutex, held only for a few field updates. Any number of producers may
// post to one queue while consumers get, wait or poll. Blocking waits sleep on a channel
// (no spinning) and register only while they wait; Post, Inc, Set and Free wake them.
//
// Triggers run outside every lock of this package, on the goroutine whose update made them
// ready (Inc, Set or AddTrigger), one at a time per counter. A trigger may call back into
// this package (increment the same or another counter, register a trigger): the callback
// only updates state, and the goroutine already running the counter's triggers fires what
// became ready once the current trigger returns, so nesting is bounded and nothing
// deadlocks here. The engine must not hold a lock of its own across Inc, Set or
// AddTrigger that a trigger's Fire also takes.
//
// # Counting-event conditions
//
// Wait and Poll on counters follow the Portals reference (and its conformance tests):
// they return once success >= test or failure != 0. Triggers follow PtlTriggered*: they
// fire once success+failure >= threshold.
package eq
