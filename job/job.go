package job

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/goportals/goportals/eq"
	"github.com/goportals/goportals/internal/bootstrap"
)

// Errors of the package, matched with errors.Is. The launcher's own failures
// (a peer rank lost, the job aborted, the launcher gone) are reported as
// ErrPeerLost, ErrAborted and ErrLauncherLost.
var (
	// ErrNotSupported: the process was started by a launcher whose protocol is
	// not implemented (for now: anything but ptlrun).
	ErrNotSupported = bootstrap.ErrNotSupported
	// ErrPeerLost: a rank died or left the job.
	ErrPeerLost = bootstrap.ErrPeerLost
	// ErrAborted: a rank aborted the job.
	ErrAborted = bootstrap.ErrAborted
	// ErrLauncherLost: the connection to the launcher broke.
	ErrLauncherLost = bootstrap.ErrLauncherLost
	// ErrNotFound: Get of a key the rank did not publish.
	ErrNotFound = bootstrap.ErrNotFound
	// ErrBadMap: a rank published a physical id that cannot be read.
	ErrBadMap = errors.New("job: malformed physical id from a rank")
)

// Job is this process's membership in a job. Its methods are safe for concurrent
// use; the collectives (Fence, Barrier, Map) are matched by order across ranks:
// every rank calls the same sequence.
type Job struct {
	b       bootstrap.Bootstrap
	release func() error // releases the process's shared join
	maps    atomic.Int64 // Map calls so far: each publishes under its own key
}

// Join joins the job this process was started in: through cmd/ptlrun's
// environment, or as rank 0 of 1 when no launcher started it. ctx bounds
// connecting to the launcher.
func Join(ctx context.Context) (*Job, error) {
	b, release, err := bootstrap.Shared(ctx)
	if err != nil {
		return nil, err
	}
	return &Job{b: b, release: release}, nil
}

// Rank returns this process's rank in [0, Size()).
func (j *Job) Rank() int { return j.b.Rank() }

// Size returns the number of ranks.
func (j *Job) Size() int { return j.b.Size() }

// Barrier waits until every rank called Barrier.
func (j *Job) Barrier(ctx context.Context) error { return j.b.Barrier(ctx) }

// Put records value under key in this rank's namespace; the next Fence publishes
// it. Keys are at most 40 bytes of [A-Za-z0-9_.:-], values at most 64 KiB.
func (j *Job) Put(key string, value []byte) error { return j.b.Put(key, value) }

// Fence publishes every Put made before it and waits for every rank.
func (j *Job) Fence(ctx context.Context) error { return j.b.Fence(ctx) }

// Get returns what rank published under key at a completed Fence.
func (j *Job) Get(ctx context.Context, rank int, key string) ([]byte, error) {
	return j.b.Get(ctx, rank, key)
}

// Abort asks the launcher to end the whole job with code and msg. The caller
// should exit afterwards.
func (j *Job) Abort(code int, msg string) error { return j.b.Abort(code, msg) }

// Close leaves the job cleanly. It is idempotent.
func (j *Job) Close() error { return j.release() }

// LogicalNI is what Map needs of a logical network interface (*portals.NI has
// it): its physical id, and SetMap.
type LogicalNI interface {
	PhysID() (eq.ProcessID, error)
	SetMap(m []eq.ProcessID) error
}

// Map exchanges the physical id of ni with every rank and sets ni's logical map
// to the job's order: rank r is the process of job rank r. It is collective: every
// rank calls it (once per logical NI, in the same order). It returns the map, and
// SetMap's error (a map set already is IGNORED: errors.Is(err, portals.Ignored)).
func (j *Job) Map(ctx context.Context, ni LogicalNI) ([]eq.ProcessID, error) {
	id, err := ni.PhysID()
	if err != nil {
		return nil, err
	}
	key := "job.phys." + strconv.FormatInt(j.maps.Add(1), 10)
	if err := j.b.Put(key, []byte(fmt.Sprintf("%d:%d", id.NID, id.PID))); err != nil {
		return nil, err
	}
	if err := j.b.Fence(ctx); err != nil {
		return nil, err
	}
	m := make([]eq.ProcessID, j.b.Size())
	for r := range m {
		v, err := j.b.Get(ctx, r, key)
		if err != nil {
			return nil, err
		}
		a, b, ok := strings.Cut(string(v), ":")
		nid, err1 := strconv.ParseUint(a, 10, 32)
		pid, err2 := strconv.ParseUint(b, 10, 32)
		if !ok || err1 != nil || err2 != nil {
			return nil, fmt.Errorf("%w: rank %d sent %q", ErrBadMap, r, v)
		}
		m[r] = eq.ProcessID{NID: eq.NID(nid), PID: eq.PID(pid), Rank: eq.Rank(r)}
	}
	return m, ni.SetMap(m)
}
