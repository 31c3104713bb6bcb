package shmem

// This file is the only one that uses package portals, package md and the job
// runtime (internal/bootstrap). Everything else in shmem speaks to the network
// through the transport and domain interfaces of transport_iface.go, so moving
// to another portals API changes this file alone.
//
// The mapping follows Sandia OpenSHMEM's Portals 4 transport:
//   - one NI without matching and with logical addressing (a PE is a rank);
//   - one portal table entry for the symmetric heap, holding one persistent list
//     entry over the whole heap (OP_PUT|OP_GET, link and success events disabled,
//     CT_COMM counting into the target counter); the remote address of a
//     symmetric object is its offset in the heap;
//   - per context, a put counter (counted ACKs of puts) and a get counter
//     (counted REPLYs of gets and fetching atomics); quiet waits until each
//     counter reaches the number of operations issued and fails when a failure
//     was counted.
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
// The current portals API has no descriptor over all of memory, so a context
// binds descriptors over the heap once (a volatile and a plain one for puts, one
// for gets) and over small scratch buffers; a transfer from or into memory
// outside the heap binds a descriptor over that buffer for the operation (the
// pin cache makes a repeated bind of the same buffer cheap) and releases it once
// the operation is complete (at the next completion wait for non-blocking ones).
// With an all-of-memory descriptor the per-operation binds disappear.

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/goportals/goportals/internal/bootstrap"
	portals "github.com/goportals/goportals/internal/nic"
	"github.com/goportals/goportals/md"
)

// heapPT is the portal table index of the symmetric heap (SOS uses its own
// index constants the same way: every PE allocates the same one).
const heapPT = portals.PTIndex(0)

// ptlTransport is the transport over package portals.
type ptlTransport struct {
	boot  bootstrap.Bootstrap
	proc  *portals.Process
	ni    *portals.NI
	alloc *md.Allocation
	heap  []byte
	le    *portals.LE
	tct   *portals.CT // target counter of the heap entry
	maxV  int         // largest volatile (copied at issue) transfer
	// crowded: more PEs than CPUs, so waits for remote writes sleep instead
	// of spinning.
	crowded bool
}

// openTransport joins the job, initializes the NI and exposes a heap of
// heapSize bytes.
func openTransport(ctx context.Context, heapSize int) (_ transport, err error) {
	boot, err := bootstrap.Open(ctx)
	if err != nil {
		return nil, err
	}
	t := &ptlTransport{boot: boot}
	defer func() {
		if err != nil {
			t.teardown()
		}
	}()
	if t.proc, err = portals.NewProcess(boot, nil); err != nil {
		return nil, err
	}
	// Today NIInit connects the job collectively and a logical NI takes its map
	// (rank i is PE i) from the job.
	if t.ni, err = t.proc.NIInit(portals.IfaceDefault, portals.NINoMatching|portals.NILogical, portals.PIDAny, nil); err != nil {
		return nil, err
	}
	t.maxV = int(t.ni.Limits().MaxVolatileSize)
	t.crowded = boot.Size() > runtime.NumCPU()
	if t.alloc, err = md.Alloc(heapSize); err != nil {
		return nil, err
	}
	t.heap = t.alloc.Bytes()
	if _, err = t.ni.PTAlloc(0, nil, heapPT); err != nil {
		return nil, err
	}
	if t.tct, err = t.ni.CTAlloc(); err != nil {
		return nil, err
	}
	uid, err := t.ni.UID()
	if err != nil {
		return nil, err
	}
	t.le, err = t.ni.LEAppend(heapPT, portals.LESpec{Start: t.heap, CT: t.tct, UID: uid,
		Options: portals.MEOpPut | portals.MEOpGet | portals.MEEventLinkDisable | portals.MEEventSuccessDisable |
			portals.MEEventCTComm}, portals.PriorityList, 0)
	if err != nil {
		return nil, err
	}
	// Every PE's entry is in place before anyone sends to it.
	if err = boot.Barrier(ctx); err != nil {
		return nil, err
	}
	return t, nil
}

func (t *ptlTransport) rank() int       { return t.boot.Rank() }
func (t *ptlTransport) size() int       { return t.boot.Size() }
func (t *ptlTransport) heapMem() []byte { return t.heap }

// jobBarrier is the runtime's barrier (used only at startup and shutdown).
func (t *ptlTransport) jobBarrier(ctx context.Context) error { return t.boot.Barrier(ctx) }

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
	if t.tct != nil {
		errs = append(errs, t.tct.Free())
		t.tct = nil
	}
	if t.ni != nil {
		errs = append(errs, t.ni.Fini())
		t.ni = nil
	}
	if t.proc != nil {
		errs = append(errs, t.proc.Close())
		t.proc = nil
	}
	if t.alloc != nil {
		errs = append(errs, t.alloc.Free())
		t.alloc, t.heap = nil, nil
	}
	if t.boot != nil {
		errs = append(errs, t.boot.Close())
		t.boot = nil
	}
	return errors.Join(errs...)
}

// ptlDomain is a context's set of descriptors and counters.
type ptlDomain struct {
	t       *ptlTransport
	putCT   *portals.CT
	getCT   *portals.CT
	heapV   *portals.MD // heap, volatile, counted ACKs
	heapP   *portals.MD // heap, counted ACKs
	heapG   *portals.MD // heap, counted REPLYs
	scrV    *portals.MD // scratch operands, volatile, counted ACKs
	scrG    *portals.MD // fetch results, counted REPLYs
	scratch []byte
	result  []byte
	flushMD *portals.MD // one word per PE, counted REPLYs (flush gets)

	dirty     []atomic.Bool // per PE: unacknowledged atomics since the last flush
	unflushed atomic.Uint64
	flushErr  atomic.Pointer[error]

	puts, gets atomic.Uint64 // operations issued that count on putCT / getCT
	putFail    atomic.Uint64 // failures already reported
	getFail    atomic.Uint64

	smu sync.Mutex // scratch and result buffers

	hmu   sync.Mutex
	held  []*portals.MD // per-operation descriptors awaiting completion
	nheld atomic.Int32  // len(held), read without hmu
}

// scratchSize holds the operand of any atomic (two 8-byte values) and any
// volatile put.
const resultSize = 64

func (t *ptlTransport) newDomain() (_ domain, err error) {
	d := &ptlDomain{t: t, scratch: make([]byte, max(t.maxV, 64)), result: make([]byte, resultSize),
		dirty: make([]atomic.Bool, t.size())}
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
	put := portals.MDEventCTAck | portals.MDEventSuccessDisable | portals.MDUnordered
	get := portals.MDEventCTReply | portals.MDEventSuccessDisable | portals.MDUnordered
	if d.heapV, err = t.ni.MDBind(portals.MDSpec{Start: t.heap, Options: put | portals.MDVolatile, CT: d.putCT}); err != nil {
		return nil, err
	}
	if d.heapP, err = t.ni.MDBind(portals.MDSpec{Start: t.heap, Options: put, CT: d.putCT}); err != nil {
		return nil, err
	}
	if d.heapG, err = t.ni.MDBind(portals.MDSpec{Start: t.heap, Options: get, CT: d.getCT}); err != nil {
		return nil, err
	}
	// The atomics' and the flushes' descriptors do not say UNORDERED: their
	// order at the target is what makes a flush complete the atomics.
	ordered := portals.MDEventCTAck | portals.MDEventSuccessDisable | portals.MDVolatile
	if d.scrV, err = t.ni.MDBind(portals.MDSpec{Start: d.scratch, Options: ordered, CT: d.putCT}); err != nil {
		return nil, err
	}
	if d.scrG, err = t.ni.MDBind(portals.MDSpec{Start: d.result, Options: get, CT: d.getCT}); err != nil {
		return nil, err
	}
	if d.flushMD, err = t.ni.MDBind(portals.MDSpec{Start: make([]byte, 8*t.size()),
		Options: portals.MDEventCTReply | portals.MDEventSuccessDisable, CT: d.getCT}); err != nil {
		return nil, err
	}
	return d, nil
}

func target(pe int) portals.ProcessID { return portals.ProcessID{Rank: portals.Rank(pe)} }

// inHeap returns the offset of b in the heap, or false when b lies outside it.
func (t *ptlTransport) inHeap(b []byte) (uint64, bool) {
	if len(b) == 0 || len(t.heap) == 0 {
		return 0, false
	}
	base := uintptr(unsafe.Pointer(unsafe.SliceData(t.heap)))
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	if p < base || p+uintptr(len(b)) > base+uintptr(len(t.heap)) {
		return 0, false
	}
	return uint64(p - base), true
}

// put starts a put of src to roff in pe's heap. With nbi false it returns when
// src may be reused (at once for a volatile transfer). With nbi true a
// transfer of more than the volatile size must find src unchanged until the
// next completion wait; from outside the heap, its descriptor is held until
// then.
func (d *ptlDomain) put(ctx context.Context, pe int, roff uint64, src []byte, nbi bool) error {
	n := uint64(len(src))
	if n == 0 {
		return nil
	}
	if err := d.throttle(ctx); err != nil {
		return err
	}
	tg := target(pe)
	if off, ok := d.t.inHeap(src); ok {
		m := d.heapP
		if len(src) <= d.t.maxV {
			m = d.heapV
		}
		d.puts.Add(1)
		if err := portals.Put(m, off, n, portals.CTAckReq, tg, heapPT, 0, roff, 0, 0); err != nil {
			d.puts.Add(^uint64(0))
			return err
		}
		if m == d.heapP && !nbi {
			return d.waitPuts(ctx)
		}
		return nil
	}
	if len(src) <= d.t.maxV {
		d.smu.Lock()
		copy(d.scratch, src)
		d.puts.Add(1)
		err := portals.Put(d.scrV, 0, n, portals.CTAckReq, tg, heapPT, 0, roff, 0, 0)
		d.smu.Unlock()
		if err != nil {
			d.puts.Add(^uint64(0))
		}
		return err
	}
	m, err := d.t.ni.MDBind(portals.MDSpec{Start: src, Options: portals.MDEventCTAck | portals.MDEventSuccessDisable |
		portals.MDUnordered, CT: d.putCT})
	if err != nil {
		return err
	}
	d.puts.Add(1)
	if err := portals.Put(m, 0, n, portals.CTAckReq, tg, heapPT, 0, roff, 0, 0); err != nil {
		d.puts.Add(^uint64(0))
		m.Release()
		return err
	}
	d.hold(m)
	if nbi {
		return nil
	}
	return d.waitPuts(ctx)
}

// get starts a get of len(dst) bytes from roff in pe's heap into dst; with nbi
// false it returns once dst holds the data.
func (d *ptlDomain) get(ctx context.Context, pe int, roff uint64, dst []byte, nbi bool) error {
	n := uint64(len(dst))
	if n == 0 {
		return nil
	}
	tg := target(pe)
	if off, ok := d.t.inHeap(dst); ok {
		d.gets.Add(1)
		if err := portals.Get(d.heapG, off, n, tg, heapPT, 0, roff, 0); err != nil {
			d.gets.Add(^uint64(0))
			return err
		}
	} else if !nbi && n <= resultSize {
		d.smu.Lock()
		defer d.smu.Unlock()
		d.gets.Add(1)
		if err := portals.Get(d.scrG, 0, n, tg, heapPT, 0, roff, 0); err != nil {
			d.gets.Add(^uint64(0))
			return err
		}
		if err := d.waitGets(ctx); err != nil {
			return err
		}
		copy(dst, d.result)
		return nil
	} else {
		m, err := d.t.ni.MDBind(portals.MDSpec{Start: dst, Options: portals.MDEventCTReply | portals.MDEventSuccessDisable |
			portals.MDUnordered, CT: d.getCT})
		if err != nil {
			return err
		}
		d.gets.Add(1)
		if err := portals.Get(m, 0, n, tg, heapPT, 0, roff, 0); err != nil {
			d.gets.Add(^uint64(0))
			m.Release()
			return err
		}
		d.hold(m)
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
	copy(d.scratch, operand)
	err := portals.Atomic(d.scrV, 0, uint64(len(operand)), portals.NoAckReq, target(pe), heapPT, 0, roff, 0, 0,
		ptlOps[op], ptlType(len(operand)))
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
		if err := portals.Get(d.flushMD, uint64(8*pe), 8, target(pe), heapPT, 0, 0, 0); err != nil {
			d.gets.Add(^uint64(0))
			d.flushErr.CompareAndSwap(nil, &err)
		}
	}
}

// fetchAtomic applies op at roff in pe's heap and returns the old value into
// result. For amoCSwap, compare is the comparison value.
func (d *ptlDomain) fetchAtomic(ctx context.Context, pe int, roff uint64, op amoOp, operand, compare, result []byte) error {
	n := uint64(len(operand))
	d.smu.Lock()
	defer d.smu.Unlock()
	copy(d.scratch, operand)
	d.gets.Add(1)
	var err error
	switch op {
	case amoSwap:
		err = portals.Swap(d.scrG, 0, d.scrV, 0, n, target(pe), heapPT, 0, roff, 0, 0, nil, ptlOps[op], ptlType(int(n)))
	case amoCSwap:
		err = portals.Swap(d.scrG, 0, d.scrV, 0, n, target(pe), heapPT, 0, roff, 0, 0, compare, ptlOps[op], ptlType(int(n)))
	default:
		err = portals.FetchAtomic(d.scrG, 0, d.scrV, 0, n, target(pe), heapPT, 0, roff, 0, 0, ptlOps[op], ptlType(int(n)))
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

// hold keeps a per-operation descriptor until its operation completed.
func (d *ptlDomain) hold(m *portals.MD) {
	d.hmu.Lock()
	d.held = append(d.held, m)
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

// quiet waits for every operation of the domain and releases the descriptors
// held for them.
func (d *ptlDomain) quiet(ctx context.Context) error {
	d.flush()
	if e := d.flushErr.Swap(nil); e != nil {
		return *e
	}
	return errors.Join(waitCT(ctx, d.putCT, &d.puts, &d.putFail), d.waitDone(waitCT(ctx, d.getCT, &d.gets, &d.getFail)))
}

// waitDone releases held descriptors whose operations are complete (all of
// them, once both counters caught up) after a successful wait.
func (d *ptlDomain) waitDone(err error) error {
	if err != nil || d.nheld.Load() == 0 {
		return err
	}
	pv, _ := d.putCT.Get()
	gv, _ := d.getCT.Get()
	if pv.Success+pv.Failure < d.puts.Load() || gv.Success+gv.Failure < d.gets.Load() {
		return nil // the other counter still has work: keep the descriptors
	}
	d.hmu.Lock()
	held := d.held
	d.held = nil
	d.nheld.Store(0)
	d.hmu.Unlock()
	var keep []*portals.MD
	for _, m := range held {
		if m.Release() != nil {
			keep = append(keep, m) // still in use (an operation issued meanwhile)
		}
	}
	if keep != nil {
		d.hmu.Lock()
		d.held = append(d.held, keep...)
		d.nheld.Store(int32(len(d.held)))
		d.hmu.Unlock()
	}
	return nil
}

// close releases the domain's resources; the caller quieted it.
func (d *ptlDomain) close() error {
	d.hmu.Lock()
	held := d.held
	d.held = nil
	d.nheld.Store(0)
	d.hmu.Unlock()
	var errs []error
	for _, m := range held {
		errs = append(errs, m.Release())
	}
	errs = append(errs, d.release())
	return errors.Join(errs...)
}

func (d *ptlDomain) release() error {
	var errs []error
	for _, m := range []**portals.MD{&d.heapV, &d.heapP, &d.heapG, &d.scrV, &d.scrG, &d.flushMD} {
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
