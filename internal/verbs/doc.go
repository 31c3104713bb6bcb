// Package verbs is goportals' boundary to RDMA hardware: a small interface shaped like
// libibverbs (device list, context, protection domain, memory region, completion queue,
// reliable-connected queue pair, work requests with scatter-gather lists) and a registry
// of the providers that implement it.
//
// Everything above this package (the pin cache, the match engine, the Portals protocol
// engine) is written against these interfaces only. Providers live in sub-packages:
// soft (pure Go, the default: shared memory and cross-memory attach inside one node),
// loopback (an in-process fake for unit tests, races and fuzzing) and ibv (cgo over
// rdma-core's libibverbs, for real HCAs). Select and Choose pick one by name or from
// PTL_PROVIDER (auto: ibv when a device has an active port, else soft).
//
// This package sits below every other goportals package and must never import them.
package verbs
