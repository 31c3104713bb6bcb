package nic

import (
	"errors"
	"testing"
)

// serialPut is a put path driven by one goroutine: an 8-byte put without ack from
// a descriptor that counts acks (as ptlbench's), then progress on the target
// until the entry's counter moved. Nothing waits for another goroutine, so its
// cost is the CPU path of one put, initiator and target, whatever the host's load.
type serialPut struct {
	m    *MD
	ct   *CT
	dst  ProcessID
	n    uint64
	size uint64
}

func newSerialPut(t testing.TB, size int) *serialPut {
	t.Helper()
	nis := newNIs(t, 2, NIMatching|NIPhysical)
	ct, err := nis[1].CTAlloc()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nis[1].PTAlloc(0, nil, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := nis[1].MEAppend(1, MESpec{Start: make([]byte, size), CT: ct, UID: UIDAny, Options: MEOpPut | MEEventCTComm,
		MatchID: ProcessID{NID: NIDAny, PID: PIDAny}}, PriorityList, 0); err != nil {
		t.Fatal(err)
	}
	srcCT, err := nis[0].CTAlloc()
	if err != nil {
		t.Fatal(err)
	}
	m, err := nis[0].MDBind(MDSpec{Start: make([]byte, size), CT: srcCT, Options: MDEventCTAck})
	if err != nil {
		t.Fatal(err)
	}
	dst, _ := nis[1].PhysID()
	s := &serialPut{m: m, ct: ct, dst: dst, size: uint64(size)}
	s.once(t) // connect
	return s
}

// once puts and drives the target's progress until the put counted.
func (s *serialPut) once(t testing.TB) {
	if err := Put(s.m, 0, s.size, NoAckReq, s.dst, 1, 0, 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	s.n++
	for i := 0; ; i++ {
		v, err := s.ct.Get()
		if err != nil {
			t.Fatal(err)
		}
		if v.Failure != 0 {
			t.Fatalf("put failed: %+v", v)
		}
		if v.Success >= s.n {
			return
		}
	}
}

// BenchmarkPutPathSerial8B is the CPU cost of one 8-byte put, from Put to the
// target's counter, on one goroutine (see serialPut).
func BenchmarkPutPathSerial8B(b *testing.B) {
	s := newSerialPut(b, 8)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s.once(b)
	}
}

// TestPutPathAllocatesNothing: an eager put without ack, from the call to the
// target's counter, allocates nothing in the whole process.
func TestPutPathAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates on its own")
	}
	s := newSerialPut(t, 8)
	for i := 0; i < 2*sendDepth; i++ {
		s.once(t) // warm the peer's queues and the engine's buffers
	}
	// AllocsPerRun counts the whole process's allocations: on a loaded host a
	// wait that had to block (a pooled waiter the collector dropped, a timer)
	// or another goroutine can add some. A put path that allocates does so in
	// every measurement; one clean measurement of five shows it does not.
	var seen []float64
	for try := 0; try < 5; try++ {
		n := testing.AllocsPerRun(500, func() { s.once(t) })
		if n == 0 {
			return
		}
		seen = append(seen, n)
	}
	t.Errorf("a put allocates: %v allocations per put in five measurements", seen)
}

// TestFireAndForgetSendReporting: a put without ack that needs no answer reports
// its SEND exactly as the descriptor's options say, with or without the engine
// lock: counted with CT_SEND only, posted unless SEND or success events are
// disabled.
func TestFireAndForgetSendReporting(t *testing.T) {
	cases := []struct {
		name      string
		withEQ    bool
		withCT    bool
		opts      MDOptions
		wantEv    bool
		wantCount uint64
	}{
		{"ct counts acks only", false, true, MDEventCTAck, false, 0},
		{"ct counts sends", false, true, MDEventCTSend, false, 1},
		{"eq takes sends", true, false, 0, true, 0},
		{"eq sends disabled", true, false, MDEventSendDisable, false, 0},
		{"eq successes disabled", true, false, MDEventSuccessDisable, false, 0},
		{"both", true, true, MDEventCTSend, true, 1},
	}
	nis := newNIs(t, 2, NIMatching|NIPhysical)
	tct, err := nis[1].CTAlloc()
	if err != nil {
		t.Fatal(err)
	}
	nis[1].PTAlloc(0, nil, 1)
	if _, err := nis[1].MEAppend(1, MESpec{Start: make([]byte, 8), CT: tct, UID: UIDAny, Options: MEOpPut | MEEventCTComm,
		MatchID: ProcessID{NID: NIDAny, PID: PIDAny}}, PriorityList, 0); err != nil {
		t.Fatal(err)
	}
	dst, _ := nis[1].PhysID()
	arrived := uint64(0)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			spec := MDSpec{Start: make([]byte, 8), Options: c.opts}
			if c.withEQ {
				if spec.EQ, err = nis[0].EQAlloc(8); err != nil {
					t.Fatal(err)
				}
			}
			if c.withCT {
				if spec.CT, err = nis[0].CTAlloc(); err != nil {
					t.Fatal(err)
				}
			}
			m, err := nis[0].MDBind(spec)
			if err != nil {
				t.Fatal(err)
			}
			if err := Put(m, 0, 8, NoAckReq, dst, 1, 0, 0, 0, 0); err != nil {
				t.Fatal(err)
			}
			arrived++
			waitCT(t, tct, arrived)
			if c.withCT {
				if v, _ := spec.CT.Get(); v.Success != c.wantCount || v.Failure != 0 {
					t.Errorf("descriptor counter %+v, want %d successes", v, c.wantCount)
				}
			}
			if c.withEQ {
				ev, err := spec.EQ.Get()
				switch {
				case c.wantEv && (err != nil || ev.Type != EventSend):
					t.Errorf("want a SEND event, got %+v, %v", ev, err)
				case !c.wantEv && err == nil:
					t.Errorf("unexpected event %+v", ev)
				}
			}
		})
	}
}

// TestConcurrentPutsCountExactly: goroutines put concurrently, with and without
// ack, to one entry; the target's counter and the initiators' counters and SEND
// events add up to exactly what was sent (run it under -race).
func TestConcurrentPutsCountExactly(t *testing.T) {
	const workers, each = 4, 300
	nis := newNIs(t, 2, NIMatching|NIPhysical)
	tct, _ := nis[1].CTAlloc()
	nis[1].PTAlloc(0, nil, 1)
	if _, err := nis[1].MEAppend(1, MESpec{Start: make([]byte, 64), CT: tct, UID: UIDAny, Options: MEOpPut | MEEventCTComm,
		MatchID: ProcessID{NID: NIDAny, PID: PIDAny}}, PriorityList, 0); err != nil {
		t.Fatal(err)
	}
	dst, _ := nis[1].PhysID()
	ack, _ := nis[0].CTAlloc()
	sends, _ := nis[0].EQAlloc(2 * workers * each)
	m, err := nis[0].MDBind(MDSpec{Start: make([]byte, 64), CT: ack, EQ: sends, Options: MDEventCTAck})
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		go func(w int) {
			for i := 0; i < each; i++ {
				a := NoAckReq
				if (i+w)%2 == 0 {
					a = CTAckReq
				}
				if err := Put(m, uint64(w), 8, a, dst, 1, 0, uint64(8*w), 0, 0); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}(w)
	}
	for w := 0; w < workers; w++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if v := waitCT(t, tct, workers*each); v.Success != workers*each || v.Failure != 0 {
		t.Fatalf("target counted %+v, want %d", v, workers*each)
	}
	if v := waitCT(t, ack, workers*each/2); v.Success != workers*each/2 || v.Failure != 0 {
		t.Fatalf("acks counted %+v, want %d", v, workers*each/2)
	}
	for i := 0; i < workers*each; i++ {
		if ev := waitEvent(t, sends); ev.Type != EventSend || ev.NIFail != NIOK {
			t.Fatalf("event %d: %+v, want a successful SEND", i, ev)
		}
	}
	if ev, err := sends.Get(); err == nil {
		t.Fatalf("an extra event %+v", ev)
	}
}

// TestMixedPutsMatchInIssueOrder: short (inline) and long (pulled) puts from one
// initiator, issued back to back, match use-once entries in issue order, whatever
// order the target's rounds handle their arrivals and transfers in; every put is
// counted once on each side.
func TestMixedPutsMatchInIssueOrder(t *testing.T) {
	const n, long = 24, 8192
	nis := newNIs(t, 2, NIMatching|NIPhysical)
	tct, _ := nis[1].CTAlloc()
	nis[1].PTAlloc(0, nil, 2)
	bufs := make([][]byte, n)
	for i := range bufs {
		bufs[i] = make([]byte, long)
		if _, err := nis[1].MEAppend(2, MESpec{Start: bufs[i], CT: tct, UID: UIDAny,
			Options: MEOpPut | MEUseOnce | MEEventCTComm, MatchID: ProcessID{NID: NIDAny, PID: PIDAny}}, PriorityList, 0); err != nil {
			t.Fatal(err)
		}
	}
	dst, _ := nis[1].PhysID()
	ack, _ := nis[0].CTAlloc()
	src := make([]byte, n*long)
	for i := 0; i < n; i++ {
		for j := 0; j < long; j++ {
			src[i*long+j] = byte(i*31 + j)
		}
	}
	m, err := nis[0].MDBind(MDSpec{Start: src, CT: ack, Options: MDEventCTAck})
	if err != nil {
		t.Fatal(err)
	}
	size := func(i int) uint64 {
		if i%3 == 1 {
			return 16
		}
		return long
	}
	for i := 0; i < n; i++ {
		if err := Put(m, uint64(i*long), size(i), CTAckReq, dst, 2, 0, 0, 0, 0); err != nil {
			t.Fatal(err)
		}
	}
	if v := waitCT(t, tct, n); v.Success != n || v.Failure != 0 {
		t.Fatalf("target counted %+v, want %d", v, n)
	}
	if v := waitCT(t, ack, n); v.Success != n || v.Failure != 0 {
		t.Fatalf("acks counted %+v, want %d", v, n)
	}
	for i := 0; i < n; i++ {
		want := src[i*long : i*long+int(size(i))]
		if got := bufs[i][:size(i)]; string(got) != string(want) {
			t.Fatalf("entry %d holds the data of another put (first bytes %v, want %v)", i, got[:4], want[:4])
		}
	}
}

// TestFastStartChecksRelease: a put without ack to a connected peer starts
// without the engine lock, and still refuses a released descriptor (ArgInvalid)
// and a rank outside the logical map.
func TestFastStartChecksRelease(t *testing.T) {
	s := newSerialPut(t, 8) // connected by its first put
	if err := s.m.Release(); err != nil {
		t.Fatal(err)
	}
	err := Put(s.m, 0, 8, NoAckReq, s.dst, 1, 0, 0, 0, 0)
	if !errors.Is(err, ArgInvalid) {
		t.Fatalf("put from a released descriptor: %v, want ArgInvalid", err)
	}
}
