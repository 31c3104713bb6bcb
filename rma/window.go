package rma

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/goportals/goportals/portals"
)

// Window is memory this process exposes to the job, together with the memory the
// other ranks exposed in the same collective Open: rank r's part is addressed by
// r and a byte offset into what r exposed. Its methods are safe for concurrent
// use, except that the collective calls (Open, Barrier, Close) must be made in the
// same order on every rank.
type Window struct {
	j     *jobState
	idx   portals.PTIndex
	hasPT bool // idx is reserved (takePT)
	mem   []byte
	pt    *portals.PT
	le    *portals.LE // nil for an empty window
	land  *portals.CT // counts the operations that reached mem
	sizes []uint64    // every rank's window length, by rank
	chunk int         // the largest message

	// Non-blocking puts count their acknowledgments on putCT. Put holds flushMu
	// shared while it starts operations; Flush holds it exclusively while it waits,
	// so the count it waits for is exactly what was started before it.
	putCT   *portals.CT
	flushMu sync.RWMutex

	mu      sync.Mutex
	issued  uint64        // puts counted on putCT
	failed  uint64        // failures Flush has reported
	pending []*portals.MD // descriptors of puts not yet flushed
	free    []*slot       // idle slots for blocking calls
	orphans []*slot       // slots whose caller gave up (context) with events due
	all     []*slot       // every slot, to free at Close

	closed atomic.Bool
}

// Open exposes mem to every rank of the job and returns the window: a collective
// call that every rank makes (with its own memory, of any length, zero included)
// and that returns once every rank's memory is exposed, so no operation can
// arrive before its target is ready. The first Open of a process joins the job
// (its rank and size come from the launcher, cmd/ptlrun; a process started alone
// is rank 0 of 1).
//
// Peers read and write mem at any time until Close; the caller reads and writes it
// itself only between barriers that order those accesses (see Barrier).
func Open(ctx context.Context, mem []byte) (*Window, error) {
	j, err := acquireJob(ctx)
	if err != nil {
		return nil, newError("Open", -1, 0, 0, portals.OK, err)
	}
	w := &Window{j: j, mem: mem}
	if err := w.open(ctx); err != nil {
		w.teardown()
		releaseJob(j)
		return nil, newError("Open", -1, 0, 0, portals.OK, err)
	}
	return w, nil
}

func (w *Window) open(ctx context.Context) error {
	j := w.j
	idx, err := j.takePT()
	if err != nil {
		return err
	}
	w.idx, w.hasPT = idx, true
	w.chunk = int(min(j.ni.Limits().MaxMsgSize, 1<<30))
	if w.pt, err = j.ni.PTAlloc(0, nil, idx); err != nil {
		return err
	}
	if w.land, err = j.ni.CTAlloc(); err != nil {
		return err
	}
	if w.putCT, err = j.ni.CTAlloc(); err != nil {
		return err
	}
	if len(w.mem) > 0 {
		// One persistent entry over the whole memory: puts, gets and atomics land at
		// the offset they name, never truncated, and are counted.
		if w.le, err = w.pt.AppendLE(portals.LESpec{Start: w.mem, CT: w.land, UID: portals.UIDAny,
			Options: portals.MEOpPut | portals.MEOpGet | portals.MEEventCTComm},
			portals.PriorityList, 0); err != nil {
			return err
		}
	}
	// The readiness handshake: the exchange returns once every rank has entered
	// it, so every rank's entry is linked by then.
	w.sizes, err = j.allgather(ctx, uint64(len(w.mem)))
	return err
}

// Close is collective: it completes this rank's operations (as Flush), waits until
// every rank has closed the window, and withdraws the memory. Close reports the
// first failure it met; the window is closed in any case.
func (w *Window) Close(ctx context.Context) error {
	if w == nil || !w.closed.CompareAndSwap(false, true) {
		return newError("Close", -1, 0, 0, portals.ArgInvalid, ErrClosed)
	}
	err := w.flush(ctx, "Close")
	if berr := w.j.barrier(ctx); err == nil && berr != nil {
		err = newError("Close", -1, 0, 0, portals.OK, berr)
	}
	w.teardown()
	releaseJob(w.j)
	return err
}

// teardown frees what open made (nil parts are skipped).
func (w *Window) teardown() {
	if w.le != nil {
		w.le.Unlink()
	}
	if w.pt != nil {
		w.pt.Free()
	}
	w.mu.Lock()
	for _, md := range w.pending {
		md.Release()
	}
	for _, s := range w.all {
		s.free()
	}
	w.pending, w.free, w.orphans, w.all = nil, nil, nil, nil
	w.mu.Unlock()
	if w.land != nil {
		w.land.Free()
	}
	if w.putCT != nil {
		w.putCT.Free()
	}
	if w.hasPT {
		w.j.givePT(w.idx)
	}
}

// Rank returns this process's rank in the job (0 for a nil window).
func (w *Window) Rank() int {
	if w == nil {
		return 0
	}
	return w.j.rank
}

// Size returns the number of ranks in the job (0 for a nil window).
func (w *Window) Size() int {
	if w == nil {
		return 0
	}
	return w.j.size
}

// Bytes returns the memory this process exposed (the slice given to Open).
func (w *Window) Bytes() []byte {
	if w == nil {
		return nil
	}
	return w.mem
}

// Len returns the length of the memory rank exposed, 0 for a rank out of range.
func (w *Window) Len(rank int) int {
	if w == nil || rank < 0 || rank >= len(w.sizes) {
		return 0
	}
	return int(w.sizes[rank])
}

// Barrier is collective: it completes this rank's operations (as Flush) and
// returns once every rank has called it. After it, every operation any rank
// started on the window before its Barrier is complete and visible in the target
// memory, so each rank may read what was written into its own memory (Bytes) and
// change it before the next round of remote accesses.
func (w *Window) Barrier(ctx context.Context) error {
	if w == nil || w.closed.Load() {
		return newError("Barrier", -1, 0, 0, portals.ArgInvalid, ErrClosed)
	}
	if err := w.flush(ctx, "Barrier"); err != nil {
		return err
	}
	if err := w.j.barrier(ctx); err != nil {
		return newError("Barrier", -1, 0, 0, portals.OK, err)
	}
	// Atomics applied to this rank's memory are visible to its loads.
	return newError("Barrier", -1, 0, 0, portals.OK, portals.AtomicSync())
}

// Arrivals returns how many operations (puts, gets, atomics) from any rank have
// reached this process's memory since Open.
func (w *Window) Arrivals() (uint64, error) {
	if w == nil || w.closed.Load() {
		return 0, newError("Arrivals", -1, 0, 0, portals.ArgInvalid, ErrClosed)
	}
	v, err := w.land.Get()
	if err != nil {
		return 0, newError("Arrivals", -1, 0, 0, portals.OK, err)
	}
	return v.Success, nil
}

// WaitArrivals waits until at least n operations have reached this process's
// memory since Open (see Arrivals): a put's data is in place when it is counted.
func (w *Window) WaitArrivals(ctx context.Context, n uint64) error {
	if w == nil || w.closed.Load() {
		return newError("WaitArrivals", -1, 0, 0, portals.ArgInvalid, ErrClosed)
	}
	_, err := waitCount(ctx, w.land, n, func(v portals.CTEvent) bool { return v.Success >= n })
	return newError("WaitArrivals", -1, 0, 0, portals.OK, err)
}

// waitCount waits on ct (for test) until done says its value is enough. CT.Wait
// returns early once the counter holds a failure; from then on the counter is
// polled, with a pause that grows to a millisecond.
func waitCount(ctx context.Context, ct *portals.CT, test uint64, done func(portals.CTEvent) bool) (portals.CTEvent, error) {
	pause := 10 * time.Microsecond
	for {
		v, err := ct.Wait(ctx, test)
		if err != nil || done(v) {
			return v, err
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return v, ctx.Err()
		case <-t.C:
		}
		pause = min(2*pause, time.Millisecond)
	}
}

// check validates a call on n bytes at off of rank's memory.
func (w *Window) check(op string, rank int, off int64, n int) error {
	if w == nil || w.closed.Load() {
		return newError(op, -1, 0, 0, portals.ArgInvalid, ErrClosed)
	}
	if rank < 0 || rank >= w.j.size {
		return newError(op, rank, off, n, portals.ArgInvalid, ErrBadRank)
	}
	if off < 0 || uint64(off) > w.sizes[rank] || uint64(n) > w.sizes[rank]-uint64(off) {
		return newError(op, rank, off, n, portals.ArgInvalid, ErrOutOfRange)
	}
	return nil
}

// target is where an operation on rank's memory at off lands.
func (w *Window) target(rank int, off int64) portals.Target {
	return portals.Target{ID: portals.ProcessID{Rank: portals.Rank(rank)}, PT: w.idx, Offset: uint64(off)}
}

// slot is what one blocking call waits with: an event queue, and a scratch
// descriptor for the operand and result of an atomic.
type slot struct {
	eq      *portals.EQ
	scratch []byte      // operand at 0, result at 16; 8-byte aligned
	md      *portals.MD // over scratch, events to eq
	user    *portals.MD // the caller's descriptor while an operation is in flight
	due     int         // events still to come on eq
}

const (
	operandOff = 0
	resultOff  = 16
)

// getSlot returns an idle slot, making one if none is.
func (w *Window) getSlot() (*slot, error) {
	w.mu.Lock()
	if n := len(w.free); n > 0 {
		s := w.free[n-1]
		w.free = w.free[:n-1]
		w.mu.Unlock()
		return s, nil
	}
	w.mu.Unlock()
	q, err := w.j.ni.EQAlloc(8)
	if err != nil {
		return nil, err
	}
	words := make([]uint64, 4)
	s := &slot{eq: q, scratch: unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), 32)}
	if s.md, err = w.j.ni.MDBind(portals.MDSpec{Start: s.scratch, EQ: q, Options: portals.MDEventSendDisable}); err != nil {
		q.Free()
		return nil, err
	}
	w.mu.Lock()
	w.all = append(w.all, s)
	w.mu.Unlock()
	return s, nil
}

// putSlot makes a slot idle again, or an orphan when events are still due on it.
func (w *Window) putSlot(s *slot) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if s.due > 0 {
		w.orphans = append(w.orphans, s)
		return
	}
	if s.user != nil {
		s.user.Release()
		s.user = nil
	}
	w.free = append(w.free, s)
}

// await waits for the completion event of one operation of n bytes on s.
func (s *slot) await(ctx context.Context, n int) error {
	ev, err := s.eq.Wait(ctx)
	if err != nil {
		return err
	}
	s.due--
	if ev.NIFail != portals.NIOK {
		return &RemoteError{Fail: ev.NIFail, Count: 1}
	}
	if ev.MLength != uint64(n) {
		return &RemoteError{Fail: portals.NIDropped, Count: 1}
	}
	return nil
}

// drain waits for every event still due on s and returns how many reported a
// failure.
func (s *slot) drain(ctx context.Context) (failed uint64, err error) {
	for s.due > 0 {
		ev, err := s.eq.Wait(ctx)
		if err != nil {
			return failed, err
		}
		s.due--
		if ev.NIFail != portals.NIOK {
			failed++
		}
	}
	return failed, nil
}

// free releases the slot's portals objects.
func (s *slot) free() {
	if s.user != nil {
		s.user.Release()
	}
	s.md.Release()
	s.eq.Free()
}
