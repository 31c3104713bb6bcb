package portals

import (
	"context"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"
)

// two ranks flood each other with gets; both progress goroutines answer and
// may block in peer.send on a full send queue while nobody reposts receives.
func TestRegressionCrossFloodGets(t *testing.T) {
	nis := newNIs(t, 2, NIMatching|NIPhysical)
	const n = 4000
	cts := make([]*CT, 2)
	mds := make([]*MD, 2)
	for r, ni := range nis {
		q, _ := ni.EQAlloc(8)
		ni.PTAlloc(0, q, 4)
		ni.MEAppend(4, MESpec{Start: make([]byte, 64), UID: UIDAny, Options: MEOpPut | MEOpGet | MEEventLinkDisable | MEEventSuccessDisable,
			MatchID: ProcessID{NID: NIDAny, PID: PIDAny}, MatchBits: 1}, PriorityList, 0)
		cts[r], _ = ni.CTAlloc()
		mds[r], _ = ni.MDBind(MDSpec{Start: make([]byte, 64), CT: cts[r], Options: MDEventCTReply})
	}
	var wg sync.WaitGroup
	for r := range nis {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dst, _ := nis[1-r].PhysID()
			for i := 0; i < n; i++ {
				if err := Get(mds[r], 0, 8, dst, 4, 1, 0, 0); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		b := make([]byte, 1<<20)
		b = b[:runtime.Stack(b, true)]
		os.WriteFile("/tmp/flood_stacks.txt", b, 0o644)
		t.Fatal("issuing gets hung")
	}
	for r := range nis {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		v, err := cts[r].Wait(ctx, n)
		cancel()
		if err != nil || v.Success != n {
			t.Fatalf("rank %d: %+v %v", r, v, err)
		}
	}
}

// Fini while another goroutine waits (and drives progress) in EQ.Wait.
func TestRegressionFiniDuringWait(t *testing.T) {
	nis := newNIs(t, 2, NIMatching|NIPhysical)
	ni := nis[0]
	q, _ := ni.EQAlloc(8)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		defer cancel()
		q.Wait(ctx)
	}()
	time.Sleep(time.Millisecond)
	ni.Fini()
	wg.Wait()
}
