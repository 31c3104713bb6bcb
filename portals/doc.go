// Package portals is goportals' public API: a Portals-4-style one-sided interface
// (network interfaces, portal table entries, memory descriptors, match and list entries,
// event queues, counting events, put, get, atomics, triggered operations, bundles) and the
// protocol engine, the software NIC that runs it over internal/verbs.
//
// Only shmem, tests, cmd and examples import this package.
package portals
