// Package job is the optional job layer over goportals: this process's rank and
// the job's size, a barrier, a key-value exchange and Abort, from the launcher
// that started the process (cmd/ptlrun; a process started alone is rank 0 of 1),
// and Map, which gives a logical network interface the job's rank-to-physical-id
// map in one call.
//
// The Portals engine needs none of it: a network interface is reachable by its
// physical id alone, and a client with its own launcher (PMI, a file, a pipe)
// exchanges PhysID results itself and calls SetMap. This package is that exchange
// for programs started by the project's launcher:
//
//	j, err := job.Join(ctx)
//	defer j.Close()
//	ni, err := proc.NIInit(portals.IfaceDefault, portals.NIMatching|portals.NILogical, portals.PIDAny, nil)
//	m, err := j.Map(ctx, ni) // every rank calls it: rank r is m[r]
//
// Package job must never be imported by the engine (portals, its internal
// packages): the dependency runs one way, from the application down.
package job
