package nic

import (
	"context"
	"fmt"
	"sync"
	"testing"
)

// memJob is an in-process job: N ranks that share a key-value store and fence.
type memJob struct {
	size  int
	mu    sync.Mutex
	cond  *sync.Cond
	kv    map[string][]byte
	in    int
	epoch int
}

func newMemJob(n int) *memJob {
	j := &memJob{size: n, kv: map[string][]byte{}}
	j.cond = sync.NewCond(&j.mu)
	return j
}

type memRank struct {
	j    *memJob
	rank int
}

func (r memRank) Rank() int { return r.rank }
func (r memRank) Size() int { return r.j.size }
func (r memRank) Put(k string, v []byte) error {
	r.j.mu.Lock()
	r.j.kv[fmt.Sprintf("%d/%s", r.rank, k)] = append([]byte(nil), v...)
	r.j.mu.Unlock()
	return nil
}
func (r memRank) Fence(ctx context.Context) error {
	j := r.j
	j.mu.Lock()
	defer j.mu.Unlock()
	e := j.epoch
	if j.in++; j.in == j.size {
		j.in, j.epoch = 0, e+1
		j.cond.Broadcast()
		return nil
	}
	for j.epoch == e {
		j.cond.Wait()
	}
	return nil
}
func (r memRank) Get(ctx context.Context, rank int, k string) ([]byte, error) {
	r.j.mu.Lock()
	defer r.j.mu.Unlock()
	v, ok := r.j.kv[fmt.Sprintf("%d/%s", rank, k)]
	if !ok {
		return nil, fmt.Errorf("no key %d/%s", rank, k)
	}
	return v, nil
}

// newNIs starts n processes of one job in this process and opens an NI with opts
// on each (collectively). They are finalized when the test ends.
func newNIs(t testing.TB, n int, opts NIOptions) []*NI {
	t.Helper()
	nis, _ := rulesJob(t, n, opts, PIDAny, nil)
	return nis
}
