package shmem

import (
	"context"
	"sync/atomic"
)

// CtxOptions are the options of CtxCreate (SHMEM_CTX_*). They are hints: every
// context is safe for concurrent use whatever they say.
type CtxOptions uint32

// Context options.
const (
	CtxSerialized CtxOptions = 1 << iota // SHMEM_CTX_SERIALIZED
	CtxPrivate                           // SHMEM_CTX_PRIVATE
	CtxNoStore                           // SHMEM_CTX_NOSTORE
)

// Ctx is a communication context (shmem_ctx_t): an independent stream of
// operations with its own completion. Quiet on one context waits only for that
// context's operations. World.Ctx is the default context; CtxCreate makes more.
type Ctx struct {
	w         *World
	d         domain
	opts      CtxOptions
	destroyed atomic.Bool
}

// CtxCreate creates a context (shmem_ctx_create).
func (w *World) CtxCreate(opts CtxOptions) (*Ctx, error) {
	const op = "shmem_ctx_create"
	if err := w.check(); err != nil {
		return nil, opErr(op, err)
	}
	if opts&^(CtxSerialized|CtxPrivate|CtxNoStore) != 0 {
		return nil, opErr(op, errf(ErrInvalidArg, "options %#x", uint32(opts)))
	}
	c, err := w.newCtx(opts)
	return c, opErr(op, err)
}

func (w *World) newCtx(opts CtxOptions) (*Ctx, error) {
	d, err := w.t.newDomain()
	if err != nil {
		return nil, err
	}
	c := &Ctx{w: w, d: d, opts: opts}
	w.cmu.Lock()
	w.ctxs[c] = struct{}{}
	w.cmu.Unlock()
	return c, nil
}

// Options returns the options the context was created with.
func (c *Ctx) Options() CtxOptions { return c.opts }

// World returns the context's World.
func (c *Ctx) World() *World { return c.w }

// check fails for a nil or destroyed context or a closed World.
func (c *Ctx) check() error {
	if c == nil {
		return errf(ErrInvalidArg, "nil context")
	}
	if err := c.w.check(); err != nil {
		return err
	}
	if c.destroyed.Load() {
		return errf(ErrInvalidArg, "context destroyed")
	}
	return nil
}

// Destroy completes the context's operations and releases it
// (shmem_ctx_destroy). The default context cannot be destroyed.
func (c *Ctx) Destroy(ctx context.Context) error {
	const op = "shmem_ctx_destroy"
	if err := c.check(); err != nil {
		return opErr(op, err)
	}
	if c == c.w.def || c == c.w.coll {
		return opErr(op, errf(ErrInvalidArg, "the default context"))
	}
	if err := c.d.quiet(ctx); err != nil {
		return opErr(op, err)
	}
	c.w.cmu.Lock()
	_, live := c.w.ctxs[c]
	delete(c.w.ctxs, c)
	c.w.cmu.Unlock()
	if !live || !c.destroyed.CompareAndSwap(false, true) {
		return opErr(op, errf(ErrInvalidArg, "context destroyed"))
	}
	return opErr(op, c.d.close())
}

// Quiet waits until every put, atomic and non-blocking get issued on the
// context is complete: its data is visible at the target (shmem_ctx_quiet). A
// failure the network counted since the last completion wait is an error
// matching ErrRemote.
func (c *Ctx) Quiet(ctx context.Context) error {
	const op = "shmem_quiet"
	if err := c.check(); err != nil {
		return opErr(op, err)
	}
	return opErr(op, c.d.quiet(ctx))
}

// Fence orders the context's puts and atomics to each PE: those issued before
// it are delivered before those issued after (shmem_ctx_fence). The network
// does not promise ordered delivery of large transfers, so Fence completes
// them as Quiet does (as SOS does without total data ordering).
func (c *Ctx) Fence(ctx context.Context) error {
	const op = "shmem_fence"
	if err := c.check(); err != nil {
		return opErr(op, err)
	}
	return opErr(op, c.d.quiet(ctx))
}

// Quiet quiets the default context (shmem_quiet).
func (w *World) Quiet(ctx context.Context) error { return w.def.Quiet(ctx) }

// Fence fences the default context (shmem_fence).
func (w *World) Fence(ctx context.Context) error { return w.def.Fence(ctx) }
