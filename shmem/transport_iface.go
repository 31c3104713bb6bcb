package shmem

import (
	"context"
	"time"
)

// transport is what the library needs from the network: the job (rank, size, a
// barrier for startup and shutdown), the local symmetric heap, the target
// counter of the heap, and domains (the resources of one context).
// transport.go and domain.go implement it over package portals.
type transport interface {
	rank() int
	size() int
	heapMem() []byte
	jobBarrier(ctx context.Context) error
	// targetCount is how many remote operations on the heap have completed.
	targetCount() (uint64, error)
	// waitTarget returns when targetCount passes seen, when d passed, or with
	// ctx's error.
	waitTarget(ctx context.Context, seen uint64, d time.Duration) error
	// mayNap reports whether a wait may sleep without driving progress
	// (something else progresses the network meanwhile).
	mayNap() bool
	newDomain() (domain, error)
	close() error
}

// domain is one context's initiator resources. Offsets are heap offsets at the
// target PE.
type domain interface {
	// put sends src to roff at pe; nbi false returns when src may be reused.
	put(ctx context.Context, pe int, roff uint64, src []byte, nbi bool) error
	// get reads len(dst) bytes from roff at pe; nbi false returns when dst holds them.
	get(ctx context.Context, pe int, roff uint64, dst []byte, nbi bool) error
	// atomic applies op with operand (4 or 8 bytes) at roff at pe, without fetching.
	atomic(ctx context.Context, pe int, roff uint64, op amoOp, operand []byte) error
	// fetchAtomic applies op and returns the old value in result; compare is the
	// comparison value of amoCSwap.
	fetchAtomic(ctx context.Context, pe int, roff uint64, op amoOp, operand, compare, result []byte) error
	// quiet waits until every operation issued on the domain completed.
	quiet(ctx context.Context) error
	close() error
}

// amoOp is an atomic operation of the transport.
type amoOp uint8

const (
	amoSum amoOp = iota
	amoBAnd
	amoBOr
	amoBXor
	amoSwap
	amoCSwap
)
