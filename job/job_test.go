package job

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/goportals/goportals/internal/bootstrap"
	portals "github.com/goportals/goportals/internal/nic"
)

// The two-rank test launches this test binary as the ranks of a ptlrun job
// (JOB_TEST_ROLE set); each joins, maps a logical NI with Map and puts to the
// other by rank.
func TestMain(m *testing.M) {
	if os.Getenv("JOB_TEST_ROLE") != "" {
		if err := rankMain(); err != nil {
			fmt.Fprintln(os.Stderr, "rank failed:", err)
			os.Exit(1)
		}
		fmt.Println("rank ok")
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestLoneProcessMapsItself(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, k := range []string{bootstrap.EnvAddr, bootstrap.EnvRank, bootstrap.EnvSize} {
		if _, ok := os.LookupEnv(k); ok {
			t.Skipf("started under a launcher (%s is set): the test needs a lone process", k)
		}
	}
	j, err := Join(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if j.Rank() != 0 || j.Size() != 1 {
		t.Fatalf("lone process is rank %d of %d", j.Rank(), j.Size())
	}
	p, err := portals.NewProcess(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ni, err := p.NIInit(portals.IfaceDefault, portals.NIMatching|portals.NILogical, portals.PIDAny, nil)
	if err != nil {
		t.Fatal(err)
	}
	m, err := j.Map(ctx, ni)
	if err != nil {
		t.Fatal(err)
	}
	phys, _ := ni.PhysID()
	if len(m) != 1 || m[0].NID != phys.NID || m[0].PID != phys.PID {
		t.Errorf("map %+v, want [%+v]", m, phys)
	}
	if _, err := j.Map(ctx, ni); !errors.Is(err, portals.Ignored) {
		t.Errorf("second Map: %v, want IGNORED from SetMap", err)
	}
	if err := j.Barrier(ctx); err != nil {
		t.Errorf("barrier of one: %v", err)
	}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func TestTwoRanksPutByRank(t *testing.T) {
	var out lockedBuffer
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	res, err := bootstrap.Launch(ctx, bootstrap.LaunchConfig{N: 2, Argv: []string{os.Args[0], "-test.run=^$"},
		Env: append(os.Environ(), "JOB_TEST_ROLE=rank"), Stdout: &out, Stderr: &out, Prefix: true,
		Timeout: 60 * time.Second})
	s := out.b.String()
	if err != nil || res == nil || len(res.Ranks) != 2 {
		t.Fatalf("job: %v\n%s", err, s)
	}
	for _, r := range res.Ranks {
		if !r.Success() {
			t.Errorf("rank %v\n%s", r, s)
		}
	}
	if strings.Count(s, "rank ok") != 2 {
		t.Errorf("not every rank finished:\n%s", s)
	}
}

// rankMain: each rank maps a logical NI through the job and puts its rank to the
// other by rank; each checks what arrived and who sent it.
func rankMain() error {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	j, err := Join(ctx)
	if err != nil {
		return err
	}
	defer j.Close()
	p, err := portals.NewProcess(nil, nil) // the engine needs no job
	if err != nil {
		return err
	}
	defer p.Close()
	ni, err := p.NIInit(portals.IfaceDefault, portals.NIMatching|portals.NILogical, portals.PIDAny, nil)
	if err != nil {
		return err
	}
	if _, err := j.Map(ctx, ni); err != nil {
		return err
	}
	me := j.Rank()
	if id, err := ni.ID(); err != nil || int(id.Rank) != me {
		return fmt.Errorf("GetId %+v %v, want rank %d", id, err, me)
	}
	q, err := ni.EQAlloc(16)
	if err != nil {
		return err
	}
	if _, err := ni.PTAlloc(0, q, 0); err != nil {
		return err
	}
	got := make([]byte, 8)
	if _, err := ni.MEAppend(0, portals.MESpec{Start: got, UID: portals.UIDAny,
		Options: portals.MEOpPut | portals.MEEventLinkDisable, MatchID: portals.ProcessID{Rank: portals.RankAny}},
		portals.PriorityList, 0); err != nil {
		return err
	}
	if err := j.Barrier(ctx); err != nil { // every entry is in place
		return err
	}
	src := []byte(fmt.Sprintf("rank%04d", me))
	md, err := ni.MDBind(portals.MDSpec{Start: src, EQ: q, Options: portals.MDEventSendDisable})
	if err != nil {
		return err
	}
	other := 1 - me
	if err := portals.Put(md, 0, 8, portals.AckReqFull, portals.ProcessID{Rank: portals.Rank(other)}, 0, 0, 0, 0, 0); err != nil {
		return err
	}
	var acked, put bool
	for !acked || !put {
		ev, err := q.Wait(ctx)
		if err != nil {
			return err
		}
		switch ev.Type {
		case portals.EventAck:
			acked = ev.NIFail == portals.NIOK
		case portals.EventPut:
			put = ev.Initiator.Rank == portals.Rank(other)
		}
	}
	if want := fmt.Sprintf("rank%04d", other); string(got) != want {
		return fmt.Errorf("got %q, want %q", got, want)
	}
	return j.Barrier(ctx) // nobody leaves while the other still needs it
}
