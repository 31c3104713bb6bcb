package nic

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/goportals/goportals/eq"
)

// Triggered operations are validated when they are posted and start when their
// counting event reaches the threshold. A counter may reach it on any goroutine,
// including the engine's own while it holds its lock, so firing only queues the
// operation; the goroutine that caused the firing then issues the queue in firing
// order once it holds no engine lock. An API call that reaches a threshold (posting
// a triggered operation whose threshold is already met, CTInc, CTSet, and the
// triggered counter updates) issues what it released before it returns, so a
// triggered put released by a call goes out before any operation the caller starts
// afterwards. Completions the engine counts are issued by whoever runs progress.

type triggerRunner struct {
	mu      sync.Mutex
	queue   []func()
	queued  atomic.Int32 // len(queue), stored under mu: progress rounds look at it without the lock
	pending int          // registered, not yet fired or cancelled (guarded by mu)
	runMu   sync.Mutex   // held while issuing the queue: one issuer at a time, in order
	wake    chan struct{}
}

type trigger struct {
	ni     *NI
	run    func()
	cancel func() // undoes what registration held (nil: nothing)
}

// Fire queues the operation for the next issueFired.
func (t *trigger) Fire() {
	r := &t.ni.trig
	r.mu.Lock()
	r.pending--
	r.queue = append(r.queue, t.run)
	r.queued.Store(int32(len(r.queue)))
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// Cancel drops the operation (CancelTriggered, counter freed).
func (t *trigger) Cancel() {
	r := &t.ni.trig
	r.mu.Lock()
	r.pending--
	r.mu.Unlock()
	if t.cancel != nil {
		t.cancel()
	}
}

// fired reports whether operations wait in the queue. It takes no lock: every
// progress round that handled work asks. (The queue length is stored under mu,
// and atomics are sequentially consistent: a Fire whose issuer found runMu held
// stored its length before that TryLock, so the holder's look after it released
// runMu sees it.)
func (r *triggerRunner) fired() bool {
	return r.queued.Load() > 0
}

// issueFired starts the queued operations in firing order. With wait, it returns only
// once everything queued before the call has been issued (by this goroutine or by the
// one issuing when it was called); without it, it leaves the work to a goroutine
// already issuing. It must be called with no engine lock held.
func (ni *NI) issueFired(wait bool) {
	r := &ni.trig
	for {
		if wait {
			r.runMu.Lock()
		} else if !r.runMu.TryLock() {
			return
		}
		for {
			r.mu.Lock()
			q := r.queue
			r.queue = nil
			r.queued.Store(0)
			r.mu.Unlock()
			if len(q) == 0 {
				break
			}
			for _, f := range q {
				f()
			}
		}
		r.runMu.Unlock()
		// Whatever was queued after the last look while we held runMu is ours to
		// issue: a goroutine that found runMu taken left it to us.
		if !r.fired() {
			return
		}
		wait = false
	}
}

// runTriggers issues operations fired by counters that nobody else issues (for
// example a counter incremented by a completion the engine handled).
func (ni *NI) runTriggers() {
	defer ni.wg.Done()
	r := &ni.trig
	for {
		select {
		case <-ni.stop:
			return
		case <-r.wake:
		}
		ni.issueFired(false)
	}
}

// addTrigger registers run at threshold on ct; cancel (if not nil) runs instead
// when the trigger is dropped, or if registration fails.
func (ni *NI) addTrigger(op string, ct *CT, threshold uint64, run, cancel func()) error {
	if ct == nil || ct.ni != ni {
		if cancel != nil {
			cancel()
		}
		return opErr(op, ArgInvalid, fmt.Errorf("trigger counter missing or of another NI"))
	}
	r := &ni.trig
	r.mu.Lock()
	if r.pending >= ni.limits.MaxTriggeredOps {
		r.mu.Unlock()
		if cancel != nil {
			cancel()
		}
		return opErr(op, NoSpace, fmt.Errorf("max_triggered_ops reached"))
	}
	r.pending++
	r.mu.Unlock()
	if err := ct.c.AddTrigger(threshold, &trigger{ni: ni, run: run, cancel: cancel}); err != nil {
		r.mu.Lock()
		r.pending--
		r.mu.Unlock()
		if cancel != nil {
			cancel()
		}
		return eqErr(op, err)
	}
	// A threshold already reached fired at once (or in the loop of a goroutine
	// already firing ct's triggers): issue it inside this call.
	ct.c.Settle()
	ni.issueFired(true)
	return nil
}

// triggered validates o now and issues it when trig reaches threshold. An
// operation that fails when it fires reports through its events (NI_UNDELIVERABLE
// when the peer is gone).
func (ni *NI) triggered(name string, o *initOp, target ProcessID, operand []byte, trig *CT, threshold uint64) error {
	if o.md == nil || o.md.ni == nil || ((o.kind == msgFetch || o.kind == msgSwap) && o.getMD == nil) {
		return nilHandle(name, "descriptor")
	}
	if err := ni.check(name); err != nil {
		return err
	}
	ni.mu.Lock()
	err := ni.validate(o, operand)
	_, _, ok := ni.peerOf(target)
	if err == nil && ok {
		// The descriptors are in use until the operation fires (or is cancelled).
		o.md.inflight++
		if o.getMD != nil {
			o.getMD.inflight++
		}
	}
	ni.mu.Unlock()
	if err != nil {
		code := ArgInvalid
		if errorsIsNotSupported(err) {
			code = Fail
		}
		return opErr(name, code, err)
	}
	if !ok {
		return opErr(name, ArgInvalid, fmt.Errorf("no process %+v in the job", target))
	}
	c := *o
	operand = append([]byte(nil), operand...)
	release := func() {
		ni.mu.Lock()
		c.md.inflight--
		if c.getMD != nil {
			c.getMD.inflight--
		}
		ni.mu.Unlock()
	}
	return ni.addTrigger(name, trig, threshold, func() {
		// The hold is dropped only once the operation holds the descriptors itself
		// (or has reported its failure), so they cannot be released in between.
		defer release()
		if err := ni.start(name, &c, target, operand); err != nil {
			// It was valid when posted; report the failure in its events.
			ni.mu.Lock()
			ni.failOp(&c)
			ni.mu.Unlock()
		}
	}, release)
}

// TriggeredPut is Put started when trig reaches threshold (PtlTriggeredPut).
func TriggeredPut(m *MD, localOffset, length uint64, ack AckReq, target ProcessID, pt PTIndex, match MatchBits,
	remoteOffset uint64, userPtr uint64, hdrData uint64, trig *CT, threshold uint64) error {
	o := putOp(msgPut, m, localOffset, length, ack, pt, match, remoteOffset, userPtr, hdrData, 0, 0)
	return mdNI(m).triggered("PtlTriggeredPut", &o, target, nil, trig, threshold)
}

// TriggeredGet is Get started when trig reaches threshold (PtlTriggeredGet).
func TriggeredGet(m *MD, localOffset, length uint64, target ProcessID, pt PTIndex, match MatchBits,
	remoteOffset uint64, userPtr uint64, trig *CT, threshold uint64) error {
	o := putOp(msgGet, m, localOffset, length, NoAckReq, pt, match, remoteOffset, userPtr, 0, 0, 0)
	return mdNI(m).triggered("PtlTriggeredGet", &o, target, nil, trig, threshold)
}

// TriggeredAtomic is Atomic started when trig reaches threshold (PtlTriggeredAtomic).
func TriggeredAtomic(m *MD, localOffset, length uint64, ack AckReq, target ProcessID, pt PTIndex, match MatchBits,
	remoteOffset uint64, userPtr uint64, hdrData uint64, aop AtomicOp, dt AtomicType, trig *CT, threshold uint64) error {
	o := putOp(msgAtomic, m, localOffset, length, ack, pt, match, remoteOffset, userPtr, hdrData, aop, dt)
	return mdNI(m).triggered("PtlTriggeredAtomic", &o, target, nil, trig, threshold)
}

// TriggeredFetchAtomic is FetchAtomic started when trig reaches threshold
// (PtlTriggeredFetchAtomic).
func TriggeredFetchAtomic(getMD *MD, getOffset uint64, putMD *MD, putOffset uint64, length uint64, target ProcessID,
	pt PTIndex, match MatchBits, remoteOffset uint64, userPtr uint64, hdrData uint64, aop AtomicOp, dt AtomicType,
	trig *CT, threshold uint64) error {
	o := fetchOp(msgFetch, getMD, getOffset, putMD, putOffset, length, pt, match, remoteOffset, userPtr, hdrData, aop, dt)
	return mdNI(putMD).triggered("PtlTriggeredFetchAtomic", &o, target, nil, trig, threshold)
}

// TriggeredSwap is Swap started when trig reaches threshold (PtlTriggeredSwap).
func TriggeredSwap(getMD *MD, getOffset uint64, putMD *MD, putOffset uint64, length uint64, target ProcessID,
	pt PTIndex, match MatchBits, remoteOffset uint64, userPtr uint64, hdrData uint64, operand []byte,
	aop AtomicOp, dt AtomicType, trig *CT, threshold uint64) error {
	o := fetchOp(msgSwap, getMD, getOffset, putMD, putOffset, length, pt, match, remoteOffset, userPtr, hdrData, aop, dt)
	return mdNI(putMD).triggered("PtlTriggeredSwap", &o, target, operand, trig, threshold)
}

// TriggeredCTInc adds inc to ct when trig reaches threshold (PtlTriggeredCTInc).
func TriggeredCTInc(ct *CT, inc CTEvent, trig *CT, threshold uint64) error {
	const op = "PtlTriggeredCTInc"
	if ct == nil || trig == nil || ct.ni == nil || ct.ni != trig.ni {
		return opErr(op, ArgInvalid, fmt.Errorf("counters missing or of different NIs"))
	}
	if (inc.Success != 0) == (inc.Failure != 0) && !(inc.Success == 0 && inc.Failure == 0) {
		return opErr(op, ArgInvalid, fmt.Errorf("increment both success and failure"))
	}
	return ct.ni.addTrigger(op, trig, threshold, func() { ct.c.Inc(inc); ct.c.Settle() }, nil)
}

// TriggeredCTSet sets ct to v when trig reaches threshold (PtlTriggeredCTSet).
func TriggeredCTSet(ct *CT, v CTEvent, trig *CT, threshold uint64) error {
	const op = "PtlTriggeredCTSet"
	if ct == nil || trig == nil || ct.ni == nil || ct.ni != trig.ni {
		return opErr(op, ArgInvalid, fmt.Errorf("counters missing or of different NIs"))
	}
	return ct.ni.addTrigger(op, trig, threshold, func() { ct.c.Set(v); ct.c.Settle() }, nil)
}

// mdNI returns m's NI, or nil (whose methods report ArgInvalid).
func mdNI(m *MD) *NI {
	if m == nil {
		return nil
	}
	return m.ni
}

var _ eq.Trigger = (*trigger)(nil)
