package shmem

// This file is the only one that uses package portals, package md and package
// job. Everything else in shmem speaks to the network through the transport and
// domain interfaces of transport_iface.go, so moving to another portals API
// changes this file alone.
//
// The mapping follows Sandia OpenSHMEM's Portals 4 transport:
//   - one NI without matching and with logical addressing (a PE is a rank; the
//     job gives the NI its map, rank i is PE i);
//   - one portal table entry for the symmetric heap, holding one persistent list
//     entry over the whole heap (OP_PUT|OP_GET, link and success events disabled,
//     CT_COMM counting into the target counter); the remote address of a
//     symmetric object is its offset in the heap;
//   - per context, a put counter (counted ACKs of puts) and a get counter
//     (counted REPLYs of gets and fetching atomics); quiet waits until each
//     counter reaches the number of operations issued and fails when a failure
//     was counted;
//   - per context, descriptors over all of memory (address 0, length 2^64-1),
//     as SOS binds them: the local side of an operation is addressed by its
//     address, so a transfer from or into any buffer needs no bind of its own.
//
// One departure from SOS: non-fetching atomics ask for no acknowledgment, which
// halves the messages of an atomic-heavy program such as GUPS. Their
// completion is established by a flush: a one-word get from every PE that
// received some since the last flush (at quiet, and after every window of
// them). This relies on a property of the engine: it handles the requests of
// one initiator at one portal table entry in the order they were issued, and
// applies an atomic (always carried inline) when it handles it, so a get's
// reply leaves after every earlier atomic from the same initiator was applied.
// A PE that died fails the flush get, which quiet reports.
//
// Go memory addressed through the all-memory descriptors. The engine reads and
// writes such memory by address, so it must stay alive and in place while an
// operation uses it. Go does not move heap objects; a buffer outside the heap
// is kept reachable from the domain (held) until a completion wait saw every
// operation issued before it complete, which also makes the compiler allocate
// it on the heap (a held slice escapes), never on a goroutine stack that may
// move. Atomic operands and fetch results go through the domain's own scratch
// buffers.

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"time"
	"unsafe"

	"github.com/goportals/goportals/internal/envknob"
	"github.com/goportals/goportals/job"
	"github.com/goportals/goportals/md"
	"github.com/goportals/goportals/portals"
)

// heapPT is the portal table index of the symmetric heap (SOS uses its own
// index constants the same way: every PE allocates the same one).
const heapPT = portals.PTIndex(0)

// allMemory is the length of a descriptor over the whole address space.
const allMemory = ^uint64(0)

// ptlTransport is the transport over package portals.
type ptlTransport struct {
	job   *job.Job
	init  bool // portals.Init succeeded: Fini is owed
	ni    *portals.NI
	alloc *md.Allocation
	heap  []byte
	pt    *portals.PT
	le    *portals.LE
	tct   *portals.CT // target counter of the heap entry
	maxV  int         // largest volatile (copied at issue) transfer
	// crowded: more PEs than CPUs, so waits for remote writes sleep instead
	// of spinning.
	crowded bool
	// noProgress: the NI has no progress goroutine (PTL_PROGRESS_GOROUTINE=0):
	// only calls that wait or poll progress it, so waits never nap.
	noProgress bool
}

// openTransport joins the job, initializes the NI and exposes a heap of
// heapSize bytes.
func openTransport(ctx context.Context, heapSize int) (_ transport, err error) {
	j, err := job.Join(ctx)
	if err != nil {
		return nil, err
	}
	t := &ptlTransport{job: j}
	defer func() {
		if err != nil {
			t.teardown()
		}
	}()
	// The library shares the job's connection to the launcher (one per rank).
	if err = portals.Init(); err != nil {
		return nil, err
	}
	t.init = true
	if t.ni, err = portals.NIInit(portals.IfaceDefault, portals.NINoMatching|portals.NILogical, portals.PIDAny, nil); err != nil {
		return nil, err
	}
	// Rank i of the NI is PE i. Map is collective; a map set already (an
	// application that shares this NI set it) is left as it is.
	if _, err = j.Map(ctx, t.ni); err != nil && !errors.Is(err, portals.Ignored) {
		return nil, err
	}
	if err = t.checkRank(); err != nil {
		return nil, err
	}
	t.maxV = int(t.ni.Limits().MaxVolatileSize)
	t.crowded = j.Size() > runtime.NumCPU()
	t.noProgress = progressEnvOff
	if t.alloc, err = md.Alloc(heapSize); err != nil {
		return nil, err
	}
	t.heap = t.alloc.Bytes()
	if t.pt, err = t.ni.PTAlloc(0, nil, heapPT); err != nil {
		return nil, err
	}
	if t.tct, err = t.ni.CTAlloc(); err != nil {
		return nil, err
	}
	uid, err := t.ni.UID()
	if err != nil {
		return nil, err
	}
	t.le, err = t.pt.AppendLE(portals.LESpec{Start: t.heap, CT: t.tct, UID: uid,
		Options: portals.MEOpPut | portals.MEOpGet | portals.MEEventLinkDisable | portals.MEEventSuccessDisable |
			portals.MEEventCTComm}, portals.PriorityList, 0)
	if err != nil {
		return nil, err
	}
	// Every PE's entry is in place before anyone sends to it.
	if err = j.Barrier(ctx); err != nil {
		return nil, err
	}
	return t, nil
}

// checkRank verifies that the NI's rank is the job's: PE numbers are ranks of
// both.
func (t *ptlTransport) checkRank() error {
	id, err := t.ni.ID()
	if err != nil {
		return err
	}
	if int64(id.Rank) != int64(t.job.Rank()) {
		return fmt.Errorf("%w: the network interface is rank %d of its map, the job's rank is %d",
			ErrInvalidArg, id.Rank, t.job.Rank())
	}
	return nil
}

func (t *ptlTransport) rank() int { return t.job.Rank() }

func (t *ptlTransport) size() int { return t.job.Size() }

func (t *ptlTransport) heapMem() []byte { return t.heap }

// jobBarrier is the job's barrier (used only at startup and shutdown).
func (t *ptlTransport) jobBarrier(ctx context.Context) error { return t.job.Barrier(ctx) }

// targetCount is how many operations the heap entry has completed (successes
// and failures).
func (t *ptlTransport) targetCount() (uint64, error) {
	v, err := t.tct.Get()
	return v.Success + v.Failure, err
}

// waitTarget waits until the heap entry has completed more than seen
// operations, or until d passes, or ctx ends; the caller re-checks memory after
// any return. Waiting on the counter drives progress on the caller's goroutine.
func (t *ptlTransport) waitTarget(ctx context.Context, seen uint64, d time.Duration) error {
	wctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	v, err := t.tct.Get()
	if err == nil && (v.Failure > 0 || t.crowded) {
		// A failed remote access was counted (the counter's wait returns at
		// once from now on), or there are more PEs than CPUs (a spinning wait
		// would keep the PE it waits for off the CPU): poll politely; the
		// progress goroutine runs the engine meanwhile.
		if v.Success+v.Failure > seen {
			return nil
		}
		return sleepCtx(wctx, failedPoll)
	}
	if err == nil {
		_, err = t.tct.Wait(wctx, seen+1)
	}
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if wctx.Err() != nil {
			return nil // the period passed: re-check memory
		}
		return err
	}
	return nil
}

func (t *ptlTransport) mayNap() bool { return !t.noProgress }

// progressEnvOff is PTL_PROGRESS_GOROUTINE=0 as the NIs see it: they read the
// variable once, when the process starts, so this reads it then too (a
// program that changes its environment before Init must not make waits nap
// on NIs that have no progress goroutine).
var progressEnvOff = envknob.Get(envknob.ProgressGoroutine) == "0"

// failedPoll is how often a wait looks again once its counter holds a failure.
const failedPoll = 20 * time.Microsecond

// sleepCtx sleeps for d or until ctx ends (nil when the time passed or ctx
// ended; the caller looks at ctx).
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
	return nil
}

// close finalizes the transport; the caller has synchronized all PEs first.
func (t *ptlTransport) close() error {
	return t.teardown()
}

func (t *ptlTransport) teardown() error {
	var errs []error
	if t.le != nil {
		errs = append(errs, t.le.Unlink())
		t.le = nil
	}
	if t.pt != nil {
		errs = append(errs, t.pt.Free())
		t.pt = nil
	}
	if t.tct != nil {
		errs = append(errs, t.tct.Free())
		t.tct = nil
	}
	if t.ni != nil {
		errs = append(errs, t.ni.Fini())
		t.ni = nil
	}
	if t.init {
		portals.Fini()
		t.init = false
	}
	if t.alloc != nil {
		errs = append(errs, t.alloc.Free())
		t.alloc, t.heap = nil, nil
	}
	if t.job != nil {
		errs = append(errs, t.job.Close())
		t.job = nil
	}
	return errors.Join(errs...)
}

// inHeap reports whether b lies in the heap (memory the transport keeps
// mapped until it closes).
func (t *ptlTransport) inHeap(b []byte) bool {
	if len(b) == 0 || len(t.heap) == 0 {
		return false
	}
	base := uintptr(unsafe.Pointer(unsafe.SliceData(t.heap)))
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return p >= base && p+uintptr(len(b)) <= base+uintptr(len(t.heap))
}
