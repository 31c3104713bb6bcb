package ibv

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/goportals/goportals/internal/nic"
)

// twoRankJob is an in-process job of two ranks sharing a key-value store and a fence.
type twoRankJob struct {
	mu    sync.Mutex
	cond  *sync.Cond
	kv    map[string][]byte
	in    int
	epoch int
}

type jobRank struct {
	j    *twoRankJob
	rank int
}

func (r jobRank) Rank() int { return r.rank }
func (r jobRank) Size() int { return 2 }
func (r jobRank) Put(k string, v []byte) error {
	r.j.mu.Lock()
	defer r.j.mu.Unlock()
	r.j.kv[fmt.Sprintf("%d/%s", r.rank, k)] = append([]byte(nil), v...)
	return nil
}
func (r jobRank) Fence(context.Context) error {
	j := r.j
	j.mu.Lock()
	defer j.mu.Unlock()
	e := j.epoch
	if j.in++; j.in == 2 {
		j.in, j.epoch = 0, e+1
		j.cond.Broadcast()
		return nil
	}
	for j.epoch == e {
		j.cond.Wait()
	}
	return nil
}
func (r jobRank) Get(_ context.Context, rank int, k string) ([]byte, error) {
	r.j.mu.Lock()
	defer r.j.mu.Unlock()
	v, ok := r.j.kv[fmt.Sprintf("%d/%s", rank, k)]
	if !ok {
		return nil, fmt.Errorf("no key %d/%s", rank, k)
	}
	return v, nil
}

// TestEngineOverIBV runs the protocol engine on this provider: two ranks of one
// process open NIs on the first device, and rank 0 puts an eager and a long
// message (rank 0 writes the long one with RDMA WRITE into the range the target
// names back, or the target pulls it with RDMA READ) into an ME of rank 1.
func TestEngineOverIBV(t *testing.T) {
	needDevice(t)
	devs, err := Provider{}.Devices()
	if err != nil || len(devs) == 0 {
		t.Fatalf("Devices() = %v, %v", devs, err)
	}
	j := &twoRankJob{kv: map[string][]byte{}}
	j.cond = sync.NewCond(&j.mu)
	var nis [2]*nic.NI
	var errs [2]error
	var wg sync.WaitGroup
	for r := range 2 {
		p, err := nic.NewProcess(jobRank{j, r}, devs[0])
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		wg.Add(1)
		go func() {
			defer wg.Done()
			nis[r], errs[r] = p.NIInit(nic.IfaceDefault, nic.NIMatching|nic.NIPhysical, nic.PIDAny, nil)
		}()
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: NIInit on %s: %v", r, devs[0].Name(), err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	target, err := nis[1].PhysID()
	if err != nil {
		t.Fatal(err)
	}
	teq, err := nis[1].EQAlloc(64)
	if err != nil {
		t.Fatal(err)
	}
	pt, err := nis[1].PTAlloc(0, teq, nic.PTAny)
	if err != nil {
		t.Fatal(err)
	}
	ieq, err := nis[0].EQAlloc(64)
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range []int{8, 1 << 20} {
		src := make([]byte, n)
		for k := range src {
			src[k] = byte(k*7 + i + 1)
		}
		dst := make([]byte, n)
		match := uint64(0x100 + i)
		if _, err := nis[1].MEAppend(pt, nic.MESpec{Start: dst, UID: nic.UIDAny, Options: nic.MEOpPut | nic.MEUseOnce,
			MatchID: nic.ProcessID{NID: nic.NIDAny, PID: nic.PIDAny}, MatchBits: match}, nic.PriorityList, 0); err != nil {
			t.Fatal(err)
		}
		md, err := nis[0].MDBind(nic.MDSpec{Start: src, EQ: ieq})
		if err != nil {
			t.Fatal(err)
		}
		if err := nic.Put(md, 0, uint64(n), nic.AckReqFull, target, pt, match, 0, 0, 0); err != nil {
			t.Fatalf("put of %d bytes: %v", n, err)
		}
		want := map[nic.EventKind]bool{nic.EventSend: true, nic.EventAck: true}
		for len(want) > 0 {
			ev, err := ieq.Wait(ctx)
			if err != nil {
				t.Fatalf("initiator events of the %d-byte put (still missing %v): %v", n, want, err)
			}
			if ev.NIFail != nic.NIOK {
				t.Fatalf("initiator event %v failed: %v", ev.Type, ev.NIFail)
			}
			delete(want, ev.Type)
		}
		for {
			ev, err := teq.Wait(ctx)
			if err != nil {
				t.Fatalf("target event of the %d-byte put: %v", n, err)
			}
			if ev.Type != nic.EventPut {
				continue
			}
			if ev.NIFail != nic.NIOK || ev.MLength != uint64(n) {
				t.Fatalf("PUT event %+v", ev)
			}
			break
		}
		if !bytes.Equal(dst, src) {
			t.Fatalf("%d-byte put: the target buffer differs from the source", n)
		}
		if err := md.Release(); err != nil {
			t.Fatal(err)
		}
	}
}
