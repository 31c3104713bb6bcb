package nic

import (
	"context"
	"testing"
	"time"
)

// BenchmarkPushedPutWindow measures windows of 64 acknowledged 1 MiB puts
// between two NIs of this process, as ptlbench's put_bw does, and reports how
// long issuing a window's puts took apart from waiting for their ACKs.
func BenchmarkPushedPutWindow(b *testing.B) {
	const size, w = 1 << 20, 64
	nis := newNIs(b, 2, NIMatching|NIPhysical)
	init, tgt := nis[0], nis[1]
	idx, _ := tgt.PTAlloc(0, nil, PTAny)
	tgt.MEAppend(idx, MESpec{Start: make([]byte, size), UID: UIDAny, Options: MEOpPut,
		MatchID: anyProc()}, PriorityList, 0)
	ct, _ := init.CTAlloc()
	md, err := init.MDBind(MDSpec{Start: make([]byte, size), CT: ct, Options: MDEventCTAck})
	if err != nil {
		b.Fatal(err)
	}
	id, _ := tgt.PhysID()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var issue time.Duration
	n := uint64(0)
	window := func(timed bool) {
		t0 := time.Now()
		for i := 0; i < w; i++ {
			if err := Put(md, 0, size, CTAckReq, id, idx, 0, 0, 0, 0); err != nil {
				b.Fatal(err)
			}
		}
		if timed {
			issue += time.Since(t0)
		}
		n += w
		if _, err := ct.Wait(ctx, n); err != nil {
			b.Fatal(err)
		}
	}
	window(false)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		window(true)
	}
	b.StopTimer()
	if init.Pushes() < n {
		b.Fatalf("%d of %d puts pushed", init.Pushes(), n)
	}
	b.ReportMetric(float64(issue.Nanoseconds())/float64(b.N)/1000, "us-issue/window")
	b.ReportMetric(float64(size)*w*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
}
