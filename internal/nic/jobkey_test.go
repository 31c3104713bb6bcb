package nic

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/goportals/goportals/eq"
	"github.com/goportals/goportals/internal/bootstrap"
	"github.com/goportals/goportals/internal/netnstest"
)

// The job key between nodes: two jobs, each launched on its own with its own
// key, on two nodes. The first job's rank holds a portal open; the second's puts
// to it by physical id. Both connection steps between the nodes (the engine's
// rendezvous and the soft provider's TCP stream) check the key of the caller's
// job, so the put is undeliverable and nothing arrives.

// keyRoles are the ranks of the job-key test.
var keyRoles = map[string]func() error{
	"keyhold": keyHold,
	"keyput":  keyPut,
}

// runKeyRole runs a job-key role if role names one; its exit code.
func runKeyRole(role string) (int, bool) {
	f, ok := keyRoles[role]
	if !ok {
		return 0, false
	}
	if err := f(); err != nil {
		fmt.Fprintln(os.Stderr, "rank failed:", err)
		return 1, true
	}
	return 0, true
}

// keyJoin joins the job, opens a physical NI with a portal entry at index 2
// counting what lands in it.
func keyJoin(ctx context.Context) (bootstrap.Bootstrap, *Process, *NI, *EQ, *CT, error) {
	b, err := bootstrap.Open(ctx)
	if err != nil {
		return nil, nil, nil, nil, nil, err
	}
	p, err := NewProcess(b, nil)
	if err != nil {
		b.Close()
		return nil, nil, nil, nil, nil, err
	}
	fail := func(err error) (bootstrap.Bootstrap, *Process, *NI, *EQ, *CT, error) {
		p.Close()
		b.Close()
		return nil, nil, nil, nil, nil, err
	}
	ni, err := p.NIInit(IfaceDefault, NIMatching|NIPhysical, PIDAny, nil)
	if err != nil {
		return fail(err)
	}
	q, err := ni.EQAlloc(64)
	if err != nil {
		return fail(err)
	}
	ct, err := ni.CTAlloc()
	if err != nil {
		return fail(err)
	}
	if _, err := ni.PTAlloc(0, q, 2); err != nil {
		return fail(err)
	}
	if _, err := ni.MEAppend(2, MESpec{Start: make([]byte, 4096), CT: ct, UID: UIDAny, Options: MEOpPut | MEEventCTComm |
		MEEventCommDisable | MEEventLinkDisable, MatchID: ProcessID{NID: NIDAny, PID: PIDAny}}, PriorityList, 0); err != nil {
		return fail(err)
	}
	return b, p, ni, q, ct, nil
}

// keyHold prints its physical id, waits for the file PORTALS_TEST_STOP, and
// says how many puts arrived.
func keyHold() error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	b, p, ni, _, ct, err := keyJoin(ctx)
	if err != nil {
		return err
	}
	defer b.Close()
	defer p.Close()
	fmt.Printf("phys %d %d\n", uint32(ni.self.NID), uint32(ni.self.PID))
	for {
		if _, err := os.Stat(os.Getenv("PORTALS_TEST_STOP")); err == nil {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("never told to stop: %w", ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
	got, err := ct.Get()
	if err != nil {
		return err
	}
	fmt.Printf("received %d\n", got.Success+got.Failure)
	return nil
}

// keyPut puts 64 bytes to the physical id PORTALS_TEST_PEER ("nid pid") and
// says how it ended: "delivered" or "undeliverable".
func keyPut() error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var nid, pid uint32
	if _, err := fmt.Sscan(os.Getenv("PORTALS_TEST_PEER"), &nid, &pid); err != nil {
		return fmt.Errorf("PORTALS_TEST_PEER: %v", err)
	}
	b, p, ni, q, _, err := keyJoin(ctx)
	if err != nil {
		return err
	}
	defer b.Close()
	defer p.Close()
	m, err := ni.MDBind(MDSpec{Start: make([]byte, 64), EQ: q, Options: MDEventSendDisable})
	if err != nil {
		return err
	}
	if err := Put(m, 0, 64, AckReqFull, ProcessID{NID: NID(nid), PID: PID(pid)}, 2, 0, 0, 0, 0); err != nil {
		return err
	}
	ev, err := q.Wait(ctx)
	switch {
	case err != nil:
		return err
	case ev.Type == eq.EventAck && ev.NIFail == eq.NIOK:
		fmt.Println("delivered")
	case ev.Type == eq.EventAck && ev.NIFail == eq.NIUndeliverable:
		fmt.Println("undeliverable")
	default:
		return fmt.Errorf("unexpected event %+v", ev)
	}
	return nil
}

var physLine = regexp.MustCompile(`\[0\] phys (\d+) (\d+)\n`)

// TestJobKeyAcrossNodes: a process of one job cannot reach a process of another
// job on another node: its put is undeliverable and nothing arrives.
func TestJobKeyAcrossNodes(t *testing.T) {
	p := netnstest.Setup(t)
	stop := filepath.Join(t.TempDir(), "stop")
	var holdOut lockedBuffer
	type jobEnd struct {
		res *bootstrap.JobResult
		err error
	}
	held := make(chan jobEnd, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	go func() {
		res, err := bootstrap.Launch(ctx, bootstrap.LaunchConfig{N: 1, Argv: p.Wrap(0, os.Args[0], "-test.run=^$"),
			Env: append(childEnv("keyhold"), "PORTALS_TEST_STOP="+stop), Stdout: &holdOut, Stderr: &holdOut, Prefix: true,
			Timeout: 80 * time.Second, Network: "unix"})
		held <- jobEnd{res, err}
	}()
	var peer string
	for peer == "" {
		if m := physLine.FindStringSubmatch(holdOut.String()); m != nil {
			peer = m[1] + " " + m[2]
			break
		}
		select {
		case e := <-held:
			t.Fatalf("the first job ended early: %v\n%s", checkJob(holdOut.String(), e.res, e.err), holdOut.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	nid, _ := strconv.ParseUint(strings.Fields(peer)[0], 10, 32)
	if ip := nidIP(NID(nid)).String(); ip != p.Addrs[0] {
		t.Fatalf("the first job's nid is %s, not its node's address %s", ip, p.Addrs[0])
	}
	var putOut lockedBuffer
	res, err := bootstrap.Launch(ctx, bootstrap.LaunchConfig{N: 1, Argv: p.Wrap(1, os.Args[0], "-test.run=^$"),
		Env: append(childEnv("keyput"), "PORTALS_TEST_PEER="+peer), Stdout: &putOut, Stderr: &putOut, Prefix: true,
		Timeout: 60 * time.Second, Network: "unix"})
	if e := checkJob(putOut.String(), res, err); e != nil {
		t.Fatal(e)
	}
	if !strings.Contains(putOut.String(), "[0] undeliverable\n") {
		t.Errorf("a put from another job's process was not refused:\n%s", putOut.String())
	}
	if err := os.WriteFile(stop, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	e := <-held
	if err := checkJob(holdOut.String(), e.res, e.err); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(holdOut.String(), "[0] received 0\n") {
		t.Errorf("something from another job arrived:\n%s", holdOut.String())
	}
}
