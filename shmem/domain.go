package shmem

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/goportals/goportals/portals"
)

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
