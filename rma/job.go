package rma

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/goportals/goportals/job"
	"github.com/goportals/goportals/portals"
)

// This file is rma's only contact with the job: which rank this process is, how
// many there are, the network interface every window lives on, and the two
// collectives the windows need (an allgather of one number, and a barrier).
//
// Package job gives the rank, the size and the collectives, through the launcher's
// bootstrap connection, which the library's own join (portals.Init) shares. The
// network interface is a non-matching logical NI; under a launcher it starts with
// the job's map, and otherwise job.Map exchanges the physical ids and sets it.
// Every portal table entry of that NI is a window's.

// jobState is this process's membership in the job, shared by its windows.
type jobState struct {
	job        *job.Job
	ni         *portals.NI
	rank, size int

	coll   sync.Mutex // one collective at a time, in the same order on every rank
	broken error      // set when a collective failed: the ranks may no longer agree on the order

	pts  map[portals.PTIndex]bool // window indexes in use
	refs int
}

var joined struct {
	mu     sync.Mutex
	j      *jobState
	inited bool // portals.Init succeeded; the library stays initialized until the process exits
}

// exchanges numbers the allgathers of the process, over every jobState: each
// publishes under a key of its own, so no value of one exchange is ever read as
// another's. Every rank makes the same exchanges in the same order, so the same
// number names the same exchange on every rank.
var exchanges atomic.Uint64

// acquireJob joins the job on the first call (initializing Portals and the NI
// the windows share) and counts a reference; releaseJob drops it.
func acquireJob(ctx context.Context) (*jobState, error) {
	joined.mu.Lock()
	defer joined.mu.Unlock()
	if joined.j != nil {
		joined.j.refs++
		return joined.j, nil
	}
	j, err := join(ctx)
	if err != nil {
		return nil, err
	}
	j.refs = 1
	joined.j = j
	return j, nil
}

// releaseJob drops one reference; the last finalizes the NI and leaves the job.
// The library itself stays initialized, and with it the process's connection to
// the launcher (which admits a process once), so a later Open joins the same job
// again on a new NI.
func releaseJob(j *jobState) {
	joined.mu.Lock()
	defer joined.mu.Unlock()
	if j.refs--; j.refs > 0 {
		return
	}
	joined.j = nil
	j.free()
}

// join initializes Portals (once per process), joins the job and initializes the
// non-matching logical NI with the job's map. Called with joined.mu held.
func join(ctx context.Context) (_ *jobState, err error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if !joined.inited {
		if err := portals.Init(); err != nil {
			return nil, err
		}
		joined.inited = true
	}
	jb, err := job.Join(ctx)
	if err != nil {
		return nil, err
	}
	j := &jobState{job: jb, rank: jb.Rank(), size: jb.Size(), pts: map[portals.PTIndex]bool{}}
	defer func() {
		if err != nil {
			j.free()
		}
	}()
	if j.ni, err = portals.NIInit(portals.IfaceDefault, portals.NINoMatching|portals.NILogical, portals.PIDAny, nil); err != nil {
		return nil, err
	}
	// Whether the NI starts with a map depends on how the process was started, the
	// same on every rank, so either every rank makes the collective job.Map or none.
	m, err := j.ni.Map()
	if errors.Is(err, portals.NoSpace) {
		if m, err = jb.Map(ctx, j.ni); errors.Is(err, portals.Ignored) {
			err = nil // a map is in force already
		}
	}
	if err != nil {
		return nil, err
	}
	id, err := j.ni.ID()
	if err != nil {
		return nil, err
	}
	if len(m) != j.size || int(id.Rank) != j.rank {
		return nil, fmt.Errorf("%w: the network interface is rank %d of %d, the job says rank %d of %d",
			portals.Fail, id.Rank, len(m), j.rank, j.size)
	}
	return j, nil
}

// free finalizes the NI (if any) and leaves the job.
func (j *jobState) free() {
	if j.ni != nil {
		j.ni.Fini()
	}
	j.job.Close()
}

// collective runs f as the job's next collective, unless an earlier one failed:
// a rank that gave up midway may have left the others at a different point of the
// sequence, so every later collective fails with the first failure.
//
// The collectives travel over the launcher's connection, beside the engine, while
// the engine writes window memory holding the NI's lock. Taking that lock
// (portals.AtomicSync) on both sides of a collective orders the caller's own
// loads and stores of window memory before it with the engine's accesses that
// peers start after it, and the engine's accesses completed before it with the
// caller's after it.
func (j *jobState) collective(f func() error) error {
	j.coll.Lock()
	defer j.coll.Unlock()
	if j.broken != nil {
		return j.broken
	}
	err := portals.AtomicSync()
	if err == nil {
		err = f()
	}
	if err == nil {
		err = portals.AtomicSync()
	}
	if err != nil {
		j.broken = err
	}
	return err
}

// allgather is collective: every rank contributes v and gets every rank's value,
// by rank. When it returns on any rank, every rank has entered it, so whatever a
// rank did before calling it (linking a window's entry) is done everywhere.
//
// It ends with a barrier: the launcher fails the whole job once a rank leaves
// without closing its connection, so a rank that returns from Open and exits at
// once must not do so while a peer still reads the values.
func (j *jobState) allgather(ctx context.Context, v uint64) ([]uint64, error) {
	var vals []uint64
	err := j.collective(func() error {
		key := "rma.len." + strconv.FormatUint(exchanges.Add(1), 10)
		if err := j.job.Put(key, []byte(strconv.FormatUint(v, 10))); err != nil {
			return err
		}
		if err := j.job.Fence(ctx); err != nil {
			return err
		}
		vals = make([]uint64, j.size)
		for r := range vals {
			b, err := j.job.Get(ctx, r, key)
			if err != nil {
				return err
			}
			if vals[r], err = strconv.ParseUint(string(b), 10, 64); err != nil {
				return fmt.Errorf("%w: rank %d published %q as its window length", portals.Fail, r, b)
			}
		}
		return j.job.Barrier(ctx)
	})
	if err != nil {
		return nil, err
	}
	return vals, nil
}

// barrier is collective: it returns once every rank has called it.
func (j *jobState) barrier(ctx context.Context) error {
	return j.collective(func() error { return j.job.Barrier(ctx) })
}

// takePT reserves the lowest free window index. Windows are opened in the same
// order on every rank, so every rank picks the same index for the same window.
func (j *jobState) takePT() (portals.PTIndex, error) {
	joined.mu.Lock()
	defer joined.mu.Unlock()
	for i := portals.PTIndex(0); int(i) <= j.ni.Limits().MaxPTIndex; i++ {
		if !j.pts[i] {
			j.pts[i] = true
			return i, nil
		}
	}
	return 0, portals.PTFull
}

// givePT returns a window index.
func (j *jobState) givePT(i portals.PTIndex) {
	joined.mu.Lock()
	defer joined.mu.Unlock()
	delete(j.pts, i)
}
