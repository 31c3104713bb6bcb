package nic

import (
	"context"
	"fmt"
)

// The job layer. A Process made over a Runtime (Init under a launcher, or
// NewProcess with a runtime) learns the physical ids of the job's ranks when it
// takes its pid, and gives the job's map, rank r to the physical id of rank r, to
// its logical NIs until SetMap replaces it. The engine itself needs none of this: a
// Process without a Runtime communicates by physical id, and by rank after SetMap.

// exchangeJobMap publishes self's physical id through the runtime and reads every
// rank's. It is collective: every rank runs it at its first NIInit. Called with
// p.mu held.
func (p *Process) exchangeJobMap(ctx context.Context, self ProcessID) error {
	rt := p.rt
	p.jobGen++
	key := fmt.Sprintf("portals.phys.%d", p.jobGen) // a new pid after the last NI: a new key
	var id [8]byte
	le.PutUint32(id[0:], uint32(self.NID))
	le.PutUint32(id[4:], uint32(self.PID))
	if err := rt.Put(key, id[:]); err != nil {
		return err
	}
	if err := rt.Fence(ctx); err != nil {
		return err
	}
	m := make([]ProcessID, rt.Size())
	for r := range m {
		v, err := rt.Get(ctx, r, key)
		if err != nil {
			return err
		}
		if len(v) != 8 {
			return fmt.Errorf("physical id of rank %d: %d bytes", r, len(v))
		}
		m[r] = ProcessID{NID: NID(le.Uint32(v)), PID: PID(le.Uint32(v[4:])), Rank: Rank(r)}
	}
	p.jobMap = m
	return nil
}

// JobMap returns the job's physical ids by rank, as the process learned them at
// its first NIInit; nil for a process without a Runtime or without an NI.
func (p *Process) JobMap() []ProcessID {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]ProcessID(nil), p.jobMap...)
}
