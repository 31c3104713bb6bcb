package portals_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/goportals/goportals/internal/bootstrap"
	"github.com/goportals/goportals/portals"
)

// envRejoinRank makes the test binary one rank of TestInitAgainInJob's job.
const envRejoinRank = "GOPORTALS_TEST_REJOIN_RANK"

func TestMain(m *testing.M) {
	if os.Getenv(envRejoinRank) != "" {
		os.Exit(rejoinRank())
	}
	os.Exit(m.Run())
}

// rejoinRank inits, puts to its peer and finis, twice in the same job, then
// leaves the job.
func rejoinRank() int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	portals.KeepJob()
	for round := 1; round <= 2; round++ {
		if err := portals.Init(); err != nil {
			fmt.Fprintf(os.Stderr, "round %d: Init: %v\n", round, err)
			return 10
		}
		err := rejoinRound(ctx, round)
		portals.Fini()
		if err != nil {
			fmt.Fprintf(os.Stderr, "round %d: %v\n", round, err)
			return 11
		}
	}
	if err := portals.LeaveJob(); err != nil {
		fmt.Fprintln(os.Stderr, "LeaveJob:", err)
		return 12
	}
	return 0
}

// rejoinRound exchanges one put with the peer rank on a logical NI. Each
// round matches its own bits, so a put of the next round that reaches this
// round's NI is refused and sent again.
func rejoinRound(ctx context.Context, round int) error {
	ni, err := portals.NIInit(portals.IfaceDefault, portals.NIMatching|portals.NILogical, portals.PIDAny, nil)
	if err != nil {
		return err
	}
	defer ni.Fini()
	m, err := ni.Map()
	if err != nil || len(m) != 2 {
		return fmt.Errorf("map of %d ranks (%v), want 2", len(m), err)
	}
	self, err := ni.ID()
	if err != nil {
		return err
	}
	peer := portals.ProcessID{Rank: 1 - self.Rank}
	eq, err := ni.EQAlloc(16)
	if err != nil {
		return err
	}
	ct, err := ni.CTAlloc()
	if err != nil {
		return err
	}
	pt, err := ni.PTAlloc(0, nil, 9)
	if err != nil {
		return err
	}
	got := make([]byte, 8)
	if _, err := pt.Append(portals.MESpec{Start: got, CT: ct, UID: portals.UIDAny,
		Options: portals.MEOpPut | portals.MEEventCTComm, MatchID: portals.ProcessID{Rank: portals.RankAny},
		MatchBits: portals.MatchBits(round)}, portals.PriorityList, 0); err != nil {
		return err
	}
	src := []byte(fmt.Sprintf("r%dfrom%d", round, self.Rank))
	md, err := ni.MDBind(portals.MDSpec{Start: src, EQ: eq})
	if err != nil {
		return err
	}
	to := portals.Target{ID: peer, PT: pt.Index(), Match: portals.MatchBits(round)}
	for acked := false; !acked; {
		if err := md.All().Put(to, portals.OpOptions{Ack: portals.AckReqFull}); err != nil {
			return err
		}
		for ev, err := range eq.Events(ctx) {
			if err != nil {
				return err
			}
			if ev.Type == portals.EventAck {
				acked = ev.NIFail == portals.NIOK
				break
			}
		}
		if !acked {
			time.Sleep(5 * time.Millisecond) // the peer's entry is not there yet
		}
	}
	if _, err := ct.Wait(ctx, 1); err != nil {
		return err
	}
	if want := fmt.Sprintf("r%dfrom%d", round, peer.Rank); string(got[:len(want)]) != want {
		return fmt.Errorf("received %q, want %q", got, want)
	}
	return nil
}

// lockedBuffer is a bytes.Buffer for the launcher's output goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestInitAgainInJob: with KeepJob, a rank of a two-rank job that calls Init and
// Fini, then Init again, still belongs to the job and transfers (a launcher
// admits one join per rank), and LeaveJob ends it cleanly.
func TestInitAgainInJob(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the launcher's ranks need Linux (bootstrap.Launch)")
	}
	var out lockedBuffer
	res, err := bootstrap.Launch(t.Context(), bootstrap.LaunchConfig{
		N:      2,
		Argv:   []string{os.Args[0], "-test.run=^$"},
		Env:    append(os.Environ(), envRejoinRank+"=1", "GORACE=atexit_sleep_ms=0"),
		Stdout: &out,
		Stderr: &out,
		Prefix: true,
		Grace:  time.Second,
	})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("job: %v (exit %d)\n%s", err, exitCode(res), strings.TrimSpace(out.String()))
	}
}

func exitCode(res *bootstrap.JobResult) int {
	if res == nil {
		return -1
	}
	return res.ExitCode
}
