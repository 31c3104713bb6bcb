package rma

import (
	"context"

	"github.com/goportals/goportals/portals"
)

// WriteAt copies p into rank's memory at byte offset off and returns once the
// data is in place there (the target acknowledged it). p may be reused as soon as
// WriteAt returns. If ctx ends first, WriteAt returns the context's error and the
// write may still happen; p must then stay unchanged until the next Flush.
//
// Errors: ErrBadRank, ErrOutOfRange (the bytes are not all inside what rank
// exposed), ErrClosed, or a *RemoteError when the target refused the data.
func (w *Window) WriteAt(ctx context.Context, rank int, p []byte, off int64) error {
	return w.blocking(ctx, "WriteAt", rank, p, off, false)
}

// ReadAt copies len(p) bytes of rank's memory at byte offset off into p and
// returns once they are there. If ctx ends first, ReadAt returns the context's
// error and p may still be written until the next Flush.
//
// Errors: as WriteAt.
func (w *Window) ReadAt(ctx context.Context, rank int, p []byte, off int64) error {
	return w.blocking(ctx, "ReadAt", rank, p, off, true)
}

// blocking runs a WriteAt (get false) or a ReadAt (get true).
func (w *Window) blocking(ctx context.Context, op string, rank int, p []byte, off int64, get bool) error {
	if err := w.check(op, rank, off, len(p)); err != nil {
		return err
	}
	if len(p) == 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return newError(op, rank, off, len(p), portals.OK, err)
	}
	s, err := w.getSlot()
	if err != nil {
		return newError(op, rank, off, len(p), portals.OK, err)
	}
	defer w.putSlot(s)
	if s.user, err = w.j.ni.MDBind(portals.MDSpec{Start: p, EQ: s.eq, Options: portals.MDEventSendDisable}); err != nil {
		return newError(op, rank, off, len(p), portals.OK, err)
	}
	for done := 0; done < len(p); {
		n := min(w.chunk, len(p)-done)
		sp, to := s.user.Span(uint64(done), uint64(n)), w.target(rank, off+int64(done))
		if get {
			err = sp.Get(to, portals.OpOptions{})
		} else {
			err = sp.Put(to, portals.OpOptions{Ack: portals.AckReqFull})
		}
		if err != nil {
			return newError(op, rank, off, len(p), portals.OK, err)
		}
		s.due++
		if err := s.await(ctx, n); err != nil {
			return newError(op, rank, off, len(p), portals.OK, err)
		}
		done += n
	}
	return nil
}

// Put starts copying p into rank's memory at byte offset off and returns without
// waiting. p must not change until a Flush (or Barrier, or Close) that started
// after Put returns; that call reports the put complete at the target, or its
// failure. A Put made while a Flush of the same window runs waits for it.
//
// Errors (at once): ErrBadRank, ErrOutOfRange, ErrClosed, or portals.NoSpace
// when too many puts await a Flush.
func (w *Window) Put(rank int, p []byte, off int64) error {
	if err := w.check("Put", rank, off, len(p)); err != nil || len(p) == 0 {
		return err
	}
	w.flushMu.RLock()
	defer w.flushMu.RUnlock()
	md, err := w.j.ni.MDBind(portals.MDSpec{Start: p, CT: w.putCT, Options: portals.MDEventCTAck})
	if err != nil {
		return newError("Put", rank, off, len(p), portals.OK, err)
	}
	var started uint64
	for done := 0; done < len(p); {
		n := min(w.chunk, len(p)-done)
		if err = md.Span(uint64(done), uint64(n)).Put(w.target(rank, off+int64(done)),
			portals.OpOptions{Ack: portals.CTAckReq}); err != nil {
			break
		}
		started++
		done += n
	}
	w.mu.Lock()
	w.issued += started
	if started > 0 {
		w.pending = append(w.pending, md)
	}
	w.mu.Unlock()
	if started == 0 {
		md.Release()
	}
	return newError("Put", rank, off, len(p), portals.OK, err)
}

// Flush waits until every Put this process started on the window before Flush is
// complete at its target, and every blocking call abandoned by its context has
// finished. It reports the puts that failed as a *RemoteError with their count.
func (w *Window) Flush(ctx context.Context) error {
	if w == nil || w.closed.Load() {
		return newError("Flush", -1, 0, 0, portals.ArgInvalid, ErrClosed)
	}
	return w.flush(ctx, "Flush")
}

func (w *Window) flush(ctx context.Context, op string) error {
	w.flushMu.Lock()
	defer w.flushMu.Unlock()
	w.mu.Lock()
	issued := w.issued
	w.mu.Unlock()
	ct, err := w.waitPuts(ctx, issued)
	if err != nil {
		return newError(op, -1, 0, 0, portals.OK, err)
	}
	w.mu.Lock()
	mds, orphans := w.pending, w.orphans
	w.pending, w.orphans = nil, nil
	failed := ct.Failure - w.failed
	w.failed = ct.Failure
	w.mu.Unlock()
	for _, md := range mds {
		md.Release()
	}
	if failed > 0 {
		// A counter with failures no longer makes CT.Wait wait (it returns as soon
		// as a failure is counted): later puts count on a fresh one. Every put on
		// the old one is complete, and no Put runs while Flush holds flushMu.
		fresh, err := w.j.ni.CTAlloc()
		if err != nil {
			return newError(op, -1, 0, 0, portals.OK, err)
		}
		w.putCT.Free()
		w.mu.Lock()
		w.putCT, w.issued, w.failed = fresh, 0, 0
		w.mu.Unlock()
	}
	for i, s := range orphans {
		n, err := s.drain(ctx)
		failed += n
		if err != nil {
			w.mu.Lock()
			w.orphans = append(w.orphans, orphans[i:]...)
			w.mu.Unlock()
			return newError(op, -1, 0, 0, portals.OK, err)
		}
		w.putSlot(s)
	}
	if failed > 0 {
		return newError(op, -1, 0, 0, portals.Fail, &RemoteError{Count: failed})
	}
	return nil
}

// waitPuts waits until n puts have completed, successfully or not, on putCT.
func (w *Window) waitPuts(ctx context.Context, n uint64) (portals.CTEvent, error) {
	return waitCount(ctx, w.putCT, n, func(v portals.CTEvent) bool { return v.Success+v.Failure >= n })
}
