package shmem

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultHeapSize is the symmetric heap of each PE when neither Options nor the
// SHMEM_SYMMETRIC_SIZE environment variable sets one. The heap is mapped
// lazily: untouched pages cost nothing.
const DefaultHeapSize = 128 << 20

// Options configure Init. The zero value (or nil) takes the defaults.
type Options struct {
	// HeapSize is the size in bytes of each PE's symmetric heap; 0 means
	// SHMEM_SYMMETRIC_SIZE (a number with an optional K, M or G suffix) or
	// DefaultHeapSize. Every PE must use the same size.
	HeapSize int
}

// World is this PE's view of the job: its PE number, the number of PEs, the
// symmetric heap and the contexts. Init returns it; Close ends it. Its methods
// are safe for concurrent use, except that collective calls (allocation,
// barriers, collectives, reductions) must be made by every PE in the same order
// and by one goroutine at a time on each PE.
type World struct {
	t    transport
	me   int
	n    int
	heap []byte

	amu        sync.Mutex
	alloc      allocator
	globalOffs map[uint64]bool // offsets of the symmetric globals (never freed)

	def  *Ctx // the default context
	coll *Ctx // the context of the library's own collectives

	cmu  sync.Mutex
	ctxs map[*Ctx]struct{}

	// Collective state (used by one goroutine at a time, see World).
	barrierEpoch uint64
	psync        uint64 // heap offset of the barrier flags

	closed atomic.Bool
	// look is held shared by a wait while it looks at the heap or the target
	// counter, and exclusively by Close while it sets closed: once Close
	// holds it, no wait looks at what Close is about to free.
	look sync.RWMutex

	// Waits (waitFor): how long a wait drives the engine itself before it
	// naps, the rounds that drove the engine and the naps taken, and (tests)
	// a function called after each round. Used by the waiting goroutine only,
	// except the counts.
	spinFor time.Duration
	spins   atomic.Uint64
	naps    atomic.Uint64
	onRound func()
}

// maxBarrierRounds bounds the dissemination barrier's rounds (2^64 PEs).
const maxBarrierRounds = 64

// reserved is the part of the heap the library keeps for itself: the barrier
// flags, one 8-byte word per round.
const reserved = maxBarrierRounds * 8

// worldMu makes Init and Close exclusive: one World per process at a time.
var worldMu sync.Mutex
var worldOpen bool

// Init joins the job as one PE (shmem_init): it initializes the network
// interface, exposes the symmetric heap and synchronizes with every other PE.
// A process started without a launcher is PE 0 of 1. Only one World may be
// open in a process at a time.
func Init(ctx context.Context, opts *Options) (*World, error) {
	const op = "shmem_init"
	size, err := heapSize(opts)
	if err != nil {
		return nil, opErr(op, err)
	}
	worldMu.Lock()
	defer worldMu.Unlock()
	if worldOpen {
		return nil, opErr(op, errf(ErrInvalidArg, "a World is already open in this process"))
	}
	t, err := openTransport(ctx, size)
	if err != nil {
		return nil, opErr(op, err)
	}
	w := &World{t: t, me: t.rank(), n: t.size(), heap: t.heapMem(), ctxs: map[*Ctx]struct{}{}, globalOffs: map[uint64]bool{},
		spinFor: defaultSpinFor}
	w.alloc.init(uint64(len(w.heap)))
	w.psync, _ = w.alloc.allocate(reserved, 8)
	err = w.allocGlobals()
	if err == nil {
		w.def, err = w.newCtx(0)
	}
	if err == nil {
		w.coll, err = w.newCtx(0)
	}
	if err != nil {
		w.closeCtxs()
		t.close()
		return nil, opErr(op, err)
	}
	worldOpen = true
	return w, nil
}

// heapSize resolves the heap size from opts and the environment.
func heapSize(opts *Options) (int, error) {
	if opts != nil && opts.HeapSize != 0 {
		if opts.HeapSize < 0 {
			return 0, errf(ErrInvalidArg, "heap size %d", opts.HeapSize)
		}
		return opts.HeapSize + reserved, nil
	}
	s, ok := os.LookupEnv("SHMEM_SYMMETRIC_SIZE")
	if !ok || s == "" {
		return DefaultHeapSize + reserved, nil
	}
	n, err := parseSize(s)
	if err != nil {
		return 0, errf(ErrInvalidArg, "SHMEM_SYMMETRIC_SIZE=%q: %v (want bytes, with an optional K, M or G suffix)", s, err)
	}
	return n + reserved, nil
}

func parseSize(s string) (int, error) {
	mult := 1
	switch strings.ToUpper(s[len(s)-1:]) {
	case "K":
		mult = 1 << 10
	case "M":
		mult = 1 << 20
	case "G":
		mult = 1 << 30
	}
	if mult != 1 {
		s = s[:len(s)-1]
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, err
	}
	if n <= 0 || n > (1<<46)/mult {
		return 0, fmt.Errorf("size out of range")
	}
	return n * mult, nil
}

// MyPE returns this PE's number (shmem_my_pe).
func (w *World) MyPE() int { return w.me }

// NPEs returns the number of PEs (shmem_n_pes).
func (w *World) NPEs() int { return w.n }

// HeapSize returns the size in bytes of the symmetric heap available to Malloc.
func (w *World) HeapSize() int { return len(w.heap) - reserved }

// Ctx returns the default context (SHMEM_CTX_DEFAULT).
func (w *World) Ctx() *Ctx {
	if w == nil {
		return nil
	}
	return w.def
}

// check fails once the World is closed.
func (w *World) check() error {
	if w == nil {
		return errf(ErrInvalidArg, "nil World")
	}
	if w.closed.Load() {
		return ErrClosed
	}
	return nil
}

// checkPE validates a PE number.
func (w *World) checkPE(pe int) error {
	if pe < 0 || pe >= w.n {
		return errf(ErrInvalidPE, "PE %d of %d", pe, w.n)
	}
	return nil
}

// Close ends the PE's part in the job (shmem_finalize): it completes every
// context's operations, synchronizes with all PEs (none leaves while another
// may still access its heap), and releases the network resources and the heap.
// Symmetric objects are invalid afterwards.
func (w *World) Close(ctx context.Context) error {
	const op = "shmem_finalize"
	if err := w.check(); err != nil {
		return opErr(op, err)
	}
	qerr := w.quietAll(ctx)
	berr := w.t.jobBarrier(ctx)
	w.look.Lock()
	w.closed.Store(true)
	w.look.Unlock()
	cerr := w.closeCtxs()
	terr := w.t.close()
	worldMu.Lock()
	worldOpen = false
	worldMu.Unlock()
	return opErr(op, errors.Join(qerr, berr, cerr, terr))
}

// quietAll quiets every live context of the program.
func (w *World) quietAll(ctx context.Context) error {
	w.cmu.Lock()
	all := make([]*Ctx, 0, len(w.ctxs))
	for c := range w.ctxs {
		// The library's own context completes its collectives' transfers
		// itself; its barrier signals need no completion.
		if c != w.coll {
			all = append(all, c)
		}
	}
	w.cmu.Unlock()
	var errs []error
	for _, c := range all {
		errs = append(errs, c.d.quiet(ctx))
	}
	return errors.Join(errs...)
}

func (w *World) closeCtxs() error {
	w.cmu.Lock()
	defer w.cmu.Unlock()
	var errs []error
	for c := range w.ctxs {
		errs = append(errs, c.d.close())
		c.destroyed.Store(true)
	}
	w.ctxs = map[*Ctx]struct{}{}
	return errors.Join(errs...)
}
