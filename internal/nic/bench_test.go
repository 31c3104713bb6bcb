package nic

import (
	"context"
	"testing"
	"time"
)

// benchPingPong measures half the round trip of a put ping-pong of size bytes
// between two ranks in this process, each waiting on its entry's counter.
func benchPingPong(b *testing.B, size int) {
	nis := newNIs(b, 2, NIMatching|NIPhysical)
	type side struct {
		md  *MD
		ct  *CT
		dst ProcessID
	}
	var s [2]side
	for r, ni := range nis {
		ct, _ := ni.CTAlloc()
		ni.PTAlloc(0, nil, 1)
		ni.MEAppend(1, MESpec{Start: make([]byte, size), CT: ct, UID: UIDAny, Options: MEOpPut | MEEventCTComm,
			MatchID: ProcessID{NID: NIDAny, PID: PIDAny}}, PriorityList, 0)
		m, _ := ni.MDBind(MDSpec{Start: make([]byte, size)})
		s[r] = side{md: m, ct: ct}
	}
	s[0].dst, _ = nis[1].PhysID()
	s[1].dst, _ = nis[0].PhysID()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := make(chan error, 1)
	n := b.N + 10
	go func() {
		for i := 1; i <= n; i++ {
			if _, err := s[1].ct.Wait(ctx, uint64(i)); err != nil {
				done <- err
				return
			}
			if err := Put(s[1].md, 0, uint64(size), NoAckReq, s[1].dst, 1, 0, 0, 0, 0); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	for i := 1; i <= n; i++ {
		if i == 11 {
			b.ResetTimer()
		}
		if err := Put(s[0].md, 0, uint64(size), NoAckReq, s[0].dst, 1, 0, 0, 0, 0); err != nil {
			b.Fatal(err)
		}
		if _, err := s[0].ct.Wait(ctx, uint64(i)); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/2/1000, "us/one-way")
}

func BenchmarkPutPingPong8B(b *testing.B)   { benchPingPong(b, 8) }
func BenchmarkPutPingPong4KiB(b *testing.B) { benchPingPong(b, 4096) }

// BenchmarkPutEager floods 8-byte puts without ack (the fire-and-forget path,
// which keeps its operation record on the caller's stack); -benchmem shows the
// allocations of the whole process, target included.
func BenchmarkPutEager(b *testing.B) {
	nis := newNIs(b, 2, NIMatching|NIPhysical)
	ct, _ := nis[1].CTAlloc()
	nis[1].PTAlloc(0, nil, 1)
	nis[1].MEAppend(1, MESpec{Start: make([]byte, 64), CT: ct, UID: UIDAny, Options: MEOpPut | MEEventCTComm,
		MatchID: ProcessID{NID: NIDAny, PID: PIDAny}}, PriorityList, 0)
	m, _ := nis[0].MDBind(MDSpec{Start: make([]byte, 64), Options: MDEventSendDisable})
	dst, _ := nis[1].PhysID()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if err := Put(m, 0, 8, NoAckReq, dst, 1, 0, 0, 0, 0); err != nil {
			b.Fatal(err)
		}
		if i%64 == 63 {
			if _, err := ct.Wait(ctx, uint64(i+1)); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// TestPollsAllocateNothing: the non-blocking calls a polling loop makes.
func TestPollsAllocateNothing(t *testing.T) {
	nis := newNIs(t, 1, NIMatching|NIPhysical)
	q, _ := nis[0].EQAlloc(8)
	ct, _ := nis[0].CTAlloc()
	if n := testing.AllocsPerRun(100, func() {
		if _, err := q.Get(); err == nil || err.(*OpError).Errno != EQEmpty { // (errors.Is would allocate here)
			t.Fatal(err)
		}
		if _, err := ct.Get(); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("EQ.Get/CT.Get allocate %v times per call", n)
	}
}
