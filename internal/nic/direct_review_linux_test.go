package nic

// In-process checks of direct access between two NIs of this process: the count
// of a get, a notice owed by a revoked window, the NI list's registration, and a
// locally failed send.

import (
	"context"
	"os"
	"testing"
	"time"
	"unsafe"

	"github.com/goportals/goportals/md"
)

// revPair is an initiator and a target NI whose portal index 4 holds one
// persistent entry over md.Alloc memory, counted on ct.
type revPair struct {
	ini, tgt *NI
	tid      ProcessID
	ct       *CT
	heap     []byte
	le       *LE
	alloc    *md.Allocation
}

// revSetup builds a revPair; it skips when direct access is unavailable here.
func revSetup(t *testing.T, heapSize int, leOpts MEOptions) *revPair {
	t.Helper()
	nis := newNIs(t, 2, NINoMatching|NIPhysical)
	ini, tgt := nis[0], nis[1]
	if tgt.direct == nil && os.Getenv("PTL_DIRECT") != "off" {
		t.Skip("no direct access here")
	}
	tid, _ := tgt.PhysID()
	ct, err := tgt.CTAlloc()
	if err != nil {
		t.Fatal(err)
	}
	a, err := md.Alloc(heapSize)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Free() })
	if _, err := tgt.PTAlloc(0, nil, 4); err != nil {
		t.Fatal(err)
	}
	le, err := tgt.LEAppend(4, LESpec{Start: a.Bytes(), CT: ct, UID: UIDAny, Options: leOpts}, PriorityList, 1)
	if err != nil {
		t.Fatal(err)
	}
	return &revPair{ini: ini, tgt: tgt, tid: tid, ct: ct, heap: a.Bytes(), le: le, alloc: a}
}

// A get carried out directly must not be counted at the target before its data
// has been read: the target may reuse the memory once its counter says the get
// happened (the engine reads, then counts).
func TestDirectGetCountedAfterRead(t *testing.T) {
	const n = 64 << 20
	p := revSetup(t, n, MEOpPut|MEOpGet|MEEventSuccessDisable|MEEventLinkDisable|MEEventCTComm)
	for i := range p.heap {
		p.heap[i] = 0x11
	}
	dst := make([]byte, n)
	q, _ := p.ini.EQAlloc(16)
	gm, err := p.ini.MDBind(MDSpec{Start: dst, EQ: q})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { // the target: once its counter says the get happened, reuse the memory
		defer close(done)
		cell := p.tgt.cells.cell(p.ct.slot)
		deadline := time.Now().Add(20 * time.Second)
		for cell.Load().Success == 0 && time.Now().Before(deadline) {
		}
		for i := len(p.heap) - 1; i >= 0; i -= 4096 {
			p.heap[i] = 0x22
		}
	}()
	before := p.ini.DirectOps()
	if err := Get(gm, 0, n, p.tid, 4, 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ev, err := q.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	<-done
	t.Logf("event %v fail %v mlen %d, direct ops %d", ev.Type, ev.NIFail, ev.MLength, p.ini.DirectOps()-before)
	bad := 0
	for i := len(dst) - 1; i >= 0; i -= 4096 {
		if dst[i] != 0x11 {
			bad++
		}
	}
	if bad != 0 {
		t.Fatalf("the get returned %d pages written by the target after its counter reported the get", bad)
	}
}

// A direct put reaches a counter with a pending trigger; the window is revoked
// (PTDisable: enabled=false and directSync under ni.mu, exactly what setEnabled
// does) before the target's notice loop takes ni.mu. The counter reached the
// threshold, so the trigger must fire.
func TestDirectNoticeSurvivesRevoke(t *testing.T) {
	p := revSetup(t, 1<<20, MEOpPut|MEOpGet|MEEventSuccessDisable|MEEventLinkDisable|MEEventCTComm)
	src := make([]byte, 8)
	pm, err := p.ini.MDBind(MDSpec{Start: src})
	if err != nil {
		t.Fatal(err)
	}
	// First put: opens the snapshot (count 1).
	if err := Put(pm, 0, 8, NoAckReq, p.tid, 4, 0, 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	waitCT(t, p.ct, 1)
	fired, _ := p.tgt.CTAlloc()
	if err := TriggeredCTInc(fired, CTEvent{Success: 1}, p.ct, 2); err != nil {
		t.Fatal(err)
	}
	ops := p.ini.DirectOps()
	p.tgt.mu.Lock() // the notice loop cannot scan the windows now
	errc := make(chan error, 1)
	go func() { errc <- Put(pm, 0, 8, NoAckReq, p.tid, 4, 0, 0, 0, 0) }()
	select {
	case err := <-errc:
		if err != nil {
			p.tgt.mu.Unlock()
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		p.tgt.mu.Unlock()
		t.Fatal("put blocked")
	}
	if p.ini.DirectOps() == ops {
		p.tgt.mu.Unlock()
		t.Skip("the second put did not go direct")
	}
	// PTDisable as setEnabled does it, under the same hold of ni.mu.
	pt := p.tgt.ptAt(4)
	pt.enabled = false
	p.tgt.directSync(pt)
	p.tgt.mu.Unlock()
	if v, _ := p.ct.Get(); v.Success != 2 {
		t.Fatalf("counter %+v, want 2 successes", v)
	}
	// The counter reached the trigger's threshold: the trigger fires (no later
	// operation will ever tell the counter again).
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := fired.Wait(ctx, 1); err != nil {
		f, _ := fired.Get()
		t.Fatalf("the trigger at the reached threshold did not fire (%+v): %v", f, err)
	}
}

// md.Free on one goroutine while another process-level NIInit registers its
// direct table: the Free hook reads ni.direct, which niInit writes after
// directRegister published the NI (run with -race).
func TestDirectRegisterNoRace(t *testing.T) {
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if a, err := md.Alloc(4096); err == nil {
				a.Free()
			}
		}
	}()
	for i := 0; i < 20; i++ {
		p := rulesSolo(t)
		if _, err := p.NIInit(IfaceDefault, NINoMatching|NIPhysical, PIDAny, nil); err != nil {
			t.Fatal(err)
		}
		p.Close()
	}
	close(stop)
	<-done
}

// One put whose raw source faults (PTL_FAIL, nothing reaches the target) counts
// as "sent" for write-after-write order but is never "seen": every later
// operation to that target stays off direct access for the life of the NI.
func TestDirectFailedSendKeepsDirect(t *testing.T) {
	p := revSetup(t, 1<<20, MEOpPut|MEOpGet|MEEventSuccessDisable|MEEventLinkDisable|MEEventCTComm)
	region := rawPages(t, 2, 1)
	base := uintptr(unsafe.Pointer(&region[0]))
	raw, err := p.ini.MDBind(MDSpec{Addr: base, Length: 2 * 4096})
	if err != nil {
		t.Fatal(err)
	}
	good, err := p.ini.MDBind(MDSpec{Start: make([]byte, 64)})
	if err != nil {
		t.Fatal(err)
	}
	if err := Put(good, 0, 8, NoAckReq, p.tid, 4, 0, 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	waitCT(t, p.ct, 1)
	n0 := p.ini.DirectOps()
	err = Put(raw, 4096, 64, NoAckReq, p.tid, 4, 0, 0, 0, 0) // the faulting source
	t.Logf("faulting put: %v", err)
	for i := 0; i < 10; i++ {
		if err := Put(good, 0, 8, NoAckReq, p.tid, 4, 0, 0, 0, 0); err != nil {
			t.Fatal(err)
		}
	}
	waitCT(t, p.ct, 11)
	// Every request went out and was handled: a later put may go direct again.
	for i := uint64(0); i < 1000 && p.ini.DirectOps() == n0; i++ {
		if err := Put(good, 0, 8, NoAckReq, p.tid, 4, 0, 0, 0, 0); err != nil {
			t.Fatal(err)
		}
		waitCT(t, p.ct, 12+i)
	}
	if d := p.ini.DirectOps() - n0; d == 0 {
		t.Fatalf("after one failed put, none of 1000 later puts went direct")
	}
}

// A USE_ONCE entry at the head of the priority list keeps the window closed; once
// a message consumed it (the engine unlinks it), the persistent entry behind it
// takes every message and direct access may stand in for the target again.
func TestDirectReopensAfterAutoUnlink(t *testing.T) {
	nis := newNIs(t, 2, NINoMatching|NIPhysical)
	ini, tgt := nis[0], nis[1]
	if tgt.direct == nil {
		t.Skip("no direct access here (PTL_DIRECT=off, PTL_SOFT_PATH=tcp or not Linux)")
	}
	tid, _ := tgt.PhysID()
	ct, err := tgt.CTAlloc()
	if err != nil {
		t.Fatal(err)
	}
	a, err := md.Alloc(1 << 20)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Free() })
	if _, err := tgt.PTAlloc(0, nil, 4); err != nil {
		t.Fatal(err)
	}
	opts := MEOpPut | MEOpGet | MEEventSuccessDisable | MEEventLinkDisable | MEEventCTComm
	if _, err := tgt.LEAppend(4, LESpec{Start: a.Bytes()[:4096], CT: ct, UID: UIDAny, Options: opts | MEUseOnce}, PriorityList, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := tgt.LEAppend(4, LESpec{Start: a.Bytes(), CT: ct, UID: UIDAny, Options: opts}, PriorityList, 2); err != nil {
		t.Fatal(err)
	}
	src, err := ini.MDBind(MDSpec{Start: make([]byte, 8)})
	if err != nil {
		t.Fatal(err)
	}
	for i := uint64(1); i <= 1000 && ini.DirectOps() == 0; i++ {
		if err := Put(src, 0, 8, NoAckReq, tid, 4, 0, 0, 0, 0); err != nil {
			t.Fatal(err)
		}
		waitCT(t, ct, i)
	}
	if ini.DirectOps() == 0 {
		t.Fatal("the use-once entry was consumed, but none of 1000 later puts went direct")
	}
}

// The target counts a request as seen before its answer leaves: an initiator that
// got the answer of a put that went through the engine goes direct with its very
// next operation (write-after-write order holds: the data had landed).
func TestDirectSeenBeforeAnswer(t *testing.T) {
	p := revSetup(t, 1<<20, MEOpPut|MEOpGet|MEEventSuccessDisable|MEEventLinkDisable|MEEventCTComm)
	q, err := p.ini.EQAlloc(16)
	if err != nil {
		t.Fatal(err)
	}
	src, err := p.ini.MDBind(MDSpec{Start: make([]byte, 64), EQ: q, Options: MDEventSendDisable})
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	hold := func() { <-release } // the target's engine stays after the answer until the check is done
	testRequestHandled.Store(&hold)
	defer testRequestHandled.Store(nil)
	defer close(release)
	// Truncates at the entry's end: through the target's engine.
	if err := Put(src, 0, 64, AckReqFull, p.tid, 4, 0, uint64(len(p.heap))-8, 0, 0); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if ev, err := q.Wait(ctx); err != nil || ev.Type != EventAck {
		t.Fatalf("ack of the truncated put: %+v %v", ev, err)
	}
	n0 := p.ini.DirectOps()
	if err := Put(src, 0, 8, NoAckReq, p.tid, 4, 0, 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	if p.ini.DirectOps() == n0 {
		t.Fatal("the put after the answer did not go direct: the target had not counted the answered request as seen")
	}
}

// TestDirectFallbackSaysWhy: an operation that a window cannot take goes to the
// engine's path and tells a test why (testDirectFallback): here a put to a
// portal index whose window is closed (no entry appended there).
func TestDirectFallbackSaysWhy(t *testing.T) {
	p := revSetup(t, 1<<16, MEOpPut|MEEventSuccessDisable|MEEventLinkDisable|MEEventCTComm)
	var why []string
	tell := func(s string) { why = append(why, s) }
	testDirectFallback.Store(&tell)
	defer testDirectFallback.Store(nil)
	m, err := p.ini.MDBind(MDSpec{Start: make([]byte, 8)})
	if err != nil {
		t.Fatal(err)
	}
	if err := Put(m, 0, 8, NoAckReq, p.tid, 4, 0, 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	if p.ini.DirectOps() == 0 {
		t.Fatalf("the put to the window did not go direct: %q", why)
	}
	why = nil
	if _, err := p.tgt.PTAlloc(0, nil, 5); err != nil {
		t.Fatal(err)
	}
	ops := p.ini.DirectOps()
	if err := Put(m, 0, 8, NoAckReq, p.tid, 5, 0, 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	if p.ini.DirectOps() != ops || len(why) == 0 || why[len(why)-1] != "window closed, changing or unmappable" {
		t.Fatalf("a put to portal index 5 (no entry: its window closed) told %q (%d direct)", why, p.ini.DirectOps()-ops)
	}
}
