package bootstrap

import (
	"context"
	"sync"
)

// Lone is the Bootstrap of a process started without a launcher: rank 0 of 1,
// with its key-value store in memory. Fence and Barrier return at once.
type Lone struct {
	mu        sync.Mutex
	pending   map[string][]byte
	published map[string][]byte
	closed    error // ErrClosed or ErrAborted once closed
}

// NewLone returns a lone-process Bootstrap.
func NewLone() *Lone {
	return &Lone{pending: map[string][]byte{}, published: map[string][]byte{}}
}

// Rank returns 0.
func (l *Lone) Rank() int { return 0 }

// Size returns 1.
func (l *Lone) Size() int { return 1 }

// Put records a copy of value under key until the next Fence.
func (l *Lone) Put(key string, value []byte) error {
	if err := checkPut(key, value); err != nil {
		return opErr("put", 0, key, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed != nil {
		return opErr("put", 0, key, l.closed)
	}
	l.pending[key] = append([]byte(nil), value...)
	return nil
}

// Fence publishes the pending puts.
func (l *Lone) Fence(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return opErr("fence", -1, "", err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed != nil {
		return opErr("fence", -1, "", l.closed)
	}
	for k, v := range l.pending {
		l.published[k] = v
	}
	clear(l.pending)
	return nil
}

// Get returns a copy of the value published under key; rank must be 0.
func (l *Lone) Get(ctx context.Context, rank int, key string) ([]byte, error) {
	if err := checkKey(key); err != nil {
		return nil, opErr("get", rank, key, err)
	}
	if rank != 0 {
		return nil, opErr("get", rank, key, errDetail(ErrBadRank, "rank %d of a job of 1", rank))
	}
	if err := ctx.Err(); err != nil {
		return nil, opErr("get", rank, key, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed != nil {
		return nil, opErr("get", rank, key, l.closed)
	}
	v, ok := l.published[key]
	if !ok {
		return nil, opErr("get", rank, key, ErrNotFound)
	}
	return append([]byte(nil), v...), nil
}

// Barrier returns at once (or the context's error).
func (l *Lone) Barrier(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return opErr("barrier", -1, "", err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed != nil {
		return opErr("barrier", -1, "", l.closed)
	}
	return nil
}

// Abort closes the Bootstrap; with no launcher there is nobody else to tell, so
// the caller's exit is what ends the job.
func (l *Lone) Abort(code int, msg string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed == nil {
		l.closed = ErrAborted
	}
	return nil
}

// Close closes the Bootstrap; later calls fail with ErrClosed.
func (l *Lone) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed == nil {
		l.closed = ErrClosed
	}
	return nil
}
