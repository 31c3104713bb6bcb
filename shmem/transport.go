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
	"sync"
	"sync/atomic"
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

func (t *ptlTransport) rank() int       { return t.job.Rank() }
func (t *ptlTransport) size() int       { return t.job.Size() }
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

// ptlDomain is a context's set of descriptors and counters. Its descriptors
// cover all of memory; the local offset of a buffer is its address.
type ptlDomain struct {
	t       *ptlTransport
	putCT   *portals.CT
	getCT   *portals.CT
	putV    *portals.MD // volatile, counted ACKs (puts up to the volatile size)
	putP    *portals.MD // counted ACKs (longer puts)
	getU    *portals.MD // counted REPLYs (gets)
	ordV    *portals.MD // ordered, volatile, counted ACKs (atomic operands)
	ordG    *portals.MD // ordered, counted REPLYs (fetch results, flush gets)
	scratch []byte      // atomic operands
	result  []byte      // fetch results
	flushed []byte      // one word per PE: where the flush gets land

	dirty     []atomic.Bool // per PE: unacknowledged atomics since the last flush
	unflushed atomic.Uint64
	flushErr  atomic.Pointer[error]

	puts, gets atomic.Uint64 // operations issued that count on putCT / getCT
	putFail    atomic.Uint64 // failures already reported
	getFail    atomic.Uint64

	smu sync.Mutex // scratch and result buffers

	hmu   sync.Mutex
	held  [][]byte     // buffers outside the heap of operations not known complete
	nheld atomic.Int32 // len(held), read without hmu
}

// scratchSize holds the operand of any atomic (two 8-byte values);
// resultSize the result of any fetching atomic.
const (
	scratchSize = 64
	resultSize  = 64
)

func (t *ptlTransport) newDomain() (_ domain, err error) {
	d := &ptlDomain{t: t, scratch: make([]byte, scratchSize), result: make([]byte, resultSize),
		flushed: make([]byte, 8*t.size()), dirty: make([]atomic.Bool, t.size())}
	defer func() {
		if err != nil {
			d.release()
		}
	}()
	if d.putCT, err = t.ni.CTAlloc(); err != nil {
		return nil, err
	}
	if d.getCT, err = t.ni.CTAlloc(); err != nil {
		return nil, err
	}
	bind := func(opts portals.MDOptions, ct *portals.CT) (*portals.MD, error) {
		return t.ni.MDBind(portals.MDSpec{Addr: 0, Length: allMemory, Options: opts | portals.MDEventSuccessDisable, CT: ct})
	}
	if d.putV, err = bind(portals.MDEventCTAck|portals.MDUnordered|portals.MDVolatile, d.putCT); err != nil {
		return nil, err
	}
	if d.putP, err = bind(portals.MDEventCTAck|portals.MDUnordered, d.putCT); err != nil {
		return nil, err
	}
	if d.getU, err = bind(portals.MDEventCTReply|portals.MDUnordered, d.getCT); err != nil {
		return nil, err
	}
	// The atomics' and the flushes' descriptors do not say UNORDERED: their
	// order at the target is what makes a flush complete the atomics.
	if d.ordV, err = bind(portals.MDEventCTAck|portals.MDVolatile, d.putCT); err != nil {
		return nil, err
	}
	if d.ordG, err = bind(portals.MDEventCTReply, d.getCT); err != nil {
		return nil, err
	}
	return d, nil
}

// at returns the span of an all-memory descriptor over b (not empty).
func at(m *portals.MD, b []byte) portals.Span {
	return m.Span(uint64(uintptr(unsafe.Pointer(unsafe.SliceData(b)))), uint64(len(b)))
}

// to names roff in pe's heap.
func to(pe int, roff uint64) portals.Target {
	return portals.Target{ID: portals.ProcessID{Rank: portals.Rank(pe)}, PT: heapPT, Offset: roff}
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

var ackCounted = portals.OpOptions{Ack: portals.CTAckReq}

// put starts a put of src to roff in pe's heap. With nbi false it returns when
// src may be reused (at once for a volatile transfer). With nbi true a
// transfer of more than the volatile size must find src unchanged until the
// next completion wait.
func (d *ptlDomain) put(ctx context.Context, pe int, roff uint64, src []byte, nbi bool) error {
	if len(src) == 0 {
		return nil
	}
	if err := d.throttle(ctx); err != nil {
		return err
	}
	m := d.putP
	if len(src) <= d.t.maxV {
		m = d.putV // copied before Put returns
	} else if !d.t.inHeap(src) {
		d.hold(src)
	}
	d.puts.Add(1)
	if err := at(m, src).Put(to(pe, roff), ackCounted); err != nil {
		d.puts.Add(^uint64(0))
		return err
	}
	if m == d.putP && !nbi {
		return d.waitPuts(ctx)
	}
	return nil
}

// get starts a get of len(dst) bytes from roff in pe's heap into dst; with nbi
// false it returns once dst holds the data.
func (d *ptlDomain) get(ctx context.Context, pe int, roff uint64, dst []byte, nbi bool) error {
	if len(dst) == 0 {
		return nil
	}
	if !d.t.inHeap(dst) {
		d.hold(dst)
	}
	d.gets.Add(1)
	if err := at(d.getU, dst).Get(to(pe, roff), portals.OpOptions{}); err != nil {
		d.gets.Add(^uint64(0))
		return err
	}
	if nbi {
		return nil
	}
	return d.waitGets(ctx)
}

// ptlOps maps the transport's atomic operations to portals'.
var ptlOps = [...]portals.AtomicOp{amoSum: portals.OpSum, amoBAnd: portals.OpBAnd, amoBOr: portals.OpBOr,
	amoBXor: portals.OpBXor, amoSwap: portals.OpSwap, amoCSwap: portals.OpCSwap}

func ptlType(size int) portals.AtomicType {
	if size == 4 {
		return portals.Uint32
	}
	return portals.Uint64
}

// atomic applies op with operand at roff in pe's heap without fetching.
func (d *ptlDomain) atomic(ctx context.Context, pe int, roff uint64, op amoOp, operand []byte) error {
	d.smu.Lock()
	n := copy(d.scratch, operand)
	err := at(d.ordV, d.scratch[:n]).Atomic(to(pe, roff), ptlOps[op], ptlType(n), portals.OpOptions{})
	d.smu.Unlock()
	if err != nil {
		return err
	}
	d.dirty[pe].Store(true)
	if d.unflushed.Add(1)%window == 0 {
		// Bound the unacknowledged atomics in flight, and run the engine on
		// this goroutine while waiting.
		d.flush()
		return d.waitGets(ctx)
	}
	return nil
}

// flush starts a one-word get from every PE that received unacknowledged
// atomics since the last flush; once the gets are complete, so are those
// atomics (see the top of this file).
func (d *ptlDomain) flush() {
	for pe := range d.dirty {
		if !d.dirty[pe].Swap(false) {
			continue
		}
		d.gets.Add(1)
		if err := at(d.ordG, d.flushed[8*pe:8*pe+8]).Get(to(pe, 0), portals.OpOptions{}); err != nil {
			d.gets.Add(^uint64(0))
			d.flushErr.CompareAndSwap(nil, &err)
		}
	}
}

// fetchAtomic applies op at roff in pe's heap and returns the old value into
// result. For amoCSwap, compare is the comparison value.
func (d *ptlDomain) fetchAtomic(ctx context.Context, pe int, roff uint64, op amoOp, operand, compare, result []byte) error {
	d.smu.Lock()
	defer d.smu.Unlock()
	n := copy(d.scratch, operand)
	src, res, tg, dt := at(d.ordV, d.scratch[:n]), at(d.ordG, d.result[:n]), to(pe, roff), ptlType(n)
	d.gets.Add(1)
	var err error
	switch op {
	case amoSwap:
		err = src.Swap(res, tg, ptlOps[op], dt, nil, portals.OpOptions{})
	case amoCSwap:
		err = src.Swap(res, tg, ptlOps[op], dt, compare, portals.OpOptions{})
	default:
		err = src.FetchAtomic(res, tg, ptlOps[op], dt, portals.OpOptions{})
	}
	if err != nil {
		d.gets.Add(^uint64(0))
		return err
	}
	if err := d.waitGets(ctx); err != nil {
		return err
	}
	copy(result, d.result[:n])
	return nil
}

// window bounds the puts and atomics of a domain that may be in flight: past
// it, the issuer waits on the put counter for half of them to complete. The
// wait runs the engine on the issuing goroutine (receiving the acknowledgments
// and the peer's requests), rather than leaving a full send queue to the
// progress goroutine; and the operations in flight stay bounded.
const window = 128

// throttle waits, when window operations are in flight, until at most
// window/2 are.
func (d *ptlDomain) throttle(ctx context.Context) error {
	issued := d.puts.Load()
	if issued < window {
		return nil
	}
	v, err := d.putCT.Get()
	if err != nil {
		return err
	}
	if v.Success+v.Failure+window > issued {
		return nil
	}
	for v.Success+v.Failure+window/2 < issued {
		// The failure, if any, is reported by the next quiet.
		if v.Failure > 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
			sleepCtx(ctx, failedPoll)
			v, err = d.putCT.Get()
		} else {
			v, err = d.putCT.Wait(ctx, issued-window/2)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// hold keeps b (Go memory outside the heap) reachable until the operation
// about to be issued on it is complete. It runs before the operation is
// counted as issued (see waitDone).
func (d *ptlDomain) hold(b []byte) {
	d.hmu.Lock()
	d.held = append(d.held, b)
	d.nheld.Store(int32(len(d.held)))
	d.hmu.Unlock()
}

// waitCT waits until ct counted every operation issued on it (re-reading the
// number issued, so operations issued meanwhile by other goroutines are waited
// for too). A failure not reported before is an error.
func waitCT(ctx context.Context, ct *portals.CT, issued, reported *atomic.Uint64) error {
	for {
		want := issued.Load()
		v, err := ct.Get()
		if err != nil {
			return err
		}
		for v.Success+v.Failure < want {
			if v.Failure > 0 {
				// CT.Wait returns at once while a failure is counted: poll.
				if err := ctx.Err(); err != nil {
					return err
				}
				sleepCtx(ctx, failedPoll)
				v, err = ct.Get()
			} else {
				v, err = ct.Wait(ctx, want)
			}
			if err != nil {
				return err
			}
		}
		if f := v.Failure; f > reported.Load() {
			old := reported.Swap(f)
			if f > old {
				return fmt.Errorf("%w: %d operations failed", ErrRemote, f-old)
			}
		}
		if issued.Load() == want {
			return nil
		}
	}
}

func (d *ptlDomain) waitPuts(ctx context.Context) error {
	return d.waitDone(waitCT(ctx, d.putCT, &d.puts, &d.putFail))
}

func (d *ptlDomain) waitGets(ctx context.Context) error {
	return d.waitDone(waitCT(ctx, d.getCT, &d.gets, &d.getFail))
}

// quiet waits for every operation of the domain and lets go of the buffers
// held for them.
func (d *ptlDomain) quiet(ctx context.Context) error {
	d.flush()
	if e := d.flushErr.Swap(nil); e != nil {
		return *e
	}
	return errors.Join(waitCT(ctx, d.putCT, &d.puts, &d.putFail), d.waitDone(waitCT(ctx, d.getCT, &d.gets, &d.getFail)))
}

// waitDone lets go of the held buffers, after a successful wait, when every
// operation issued so far is complete.
//
// Under hmu, the counters are read before the numbers issued: a counter
// counts only operations issued before it was read, so when it reaches the
// number issued read after it, every operation issued up to then is
// complete, and with it every held buffer's (held before its operation was
// counted as issued, and before hmu was taken here).
func (d *ptlDomain) waitDone(err error) error {
	if err != nil || d.nheld.Load() == 0 {
		return err
	}
	d.hmu.Lock()
	defer d.hmu.Unlock()
	pv, perr := d.putCT.Get()
	gv, gerr := d.getCT.Get()
	if perr != nil || gerr != nil || pv.Success+pv.Failure < d.puts.Load() || gv.Success+gv.Failure < d.gets.Load() {
		return nil // work still in flight: keep the buffers
	}
	clear(d.held)
	d.held = d.held[:0]
	d.nheld.Store(0)
	return nil
}

// close releases the domain's resources; the caller quieted it.
func (d *ptlDomain) close() error {
	d.hmu.Lock()
	d.held = nil
	d.nheld.Store(0)
	d.hmu.Unlock()
	return d.release()
}

func (d *ptlDomain) release() error {
	var errs []error
	for _, m := range []**portals.MD{&d.putV, &d.putP, &d.getU, &d.ordV, &d.ordG} {
		if *m != nil {
			errs = append(errs, (*m).Release())
			*m = nil
		}
	}
	for _, c := range []**portals.CT{&d.putCT, &d.getCT} {
		if *c != nil {
			errs = append(errs, (*c).Free())
			*c = nil
		}
	}
	return errors.Join(errs...)
}
