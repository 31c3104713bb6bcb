package nic

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"
)

// Progress inside the calls: two processes, each with GOMAXPROCS=1 and neither the
// NI's progress goroutine nor the rendezvous listener's goroutine, put to each
// other (eager and long). Each only spins on EQ.Get: every step (serving the
// connection request, matching, the RDMA READ of the long put, the ACK) must be
// driven by those calls, or the test hangs until its deadline.

func init() {
	harnessRoles["spin-target"] = func(string) int { return spinRole("target") }
	harnessRoles["spin-initiator"] = func(string) int { return spinRole("initiator") }
}

func TestProgressInsideCallsGOMAXPROCS1(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var outs [2]bytes.Buffer
	var cmds [2]*exec.Cmd
	for i, role := range []string{"target", "initiator"} {
		c := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
		c.Env = append(cflowEnv("x", dir), "PORTALS_TEST_ROLE=spin-"+role)
		c.Stdout, c.Stderr = &outs[i], &outs[i]
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[i] = c
	}
	for i, role := range []string{"target", "initiator"} {
		err := cmds[i].Wait()
		if err != nil || !strings.Contains(outs[i].String(), "spin "+role+" ok") {
			t.Errorf("%s: %v\n%s", role, err, outs[i].String())
		}
	}
}

func spinRole(role string) int {
	runtime.GOMAXPROCS(1)
	testNoHelpers.Store(true)
	if err := spinRun(role); err != nil {
		fmt.Fprintf(os.Stderr, "spin %s: %v\n", role, err)
		return 1
	}
	fmt.Printf("spin %s ok\n", role)
	return 0
}

// spinGet spins on q.Get until an event comes (the deadline only guards against
// a hang).
func spinGet(ctx context.Context, q *EQ) (Event, error) {
	for i := 0; ; i++ {
		ev, err := q.Get()
		if !errors.Is(err, EQEmpty) {
			return ev, err
		}
		if i&4095 == 0 && ctx.Err() != nil {
			return Event{}, ctx.Err()
		}
	}
}

func spinRun(role string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p, err := NewProcess(nil, nil)
	if err != nil {
		return err
	}
	defer p.Close()
	ni, err := p.NIInit(IfaceDefault, NIMatching|NIPhysical, PIDAny, nil)
	if err != nil {
		return err
	}
	q, err := ni.EQAlloc(64)
	if err != nil {
		return err
	}
	me, _ := ni.PhysID()
	sizes := []uint64{8, 1 << 20}
	if role == "target" {
		buf := make([]byte, 1<<20)
		if _, err := ni.PTAlloc(0, q, 3); err != nil {
			return err
		}
		if _, err := ni.MEAppend(3, MESpec{Start: buf, UID: UIDAny, Options: MEOpPut | MEEventLinkDisable,
			MatchID: ProcessID{NID: NIDAny, PID: PIDAny}}, PriorityList, 0); err != nil {
			return err
		}
		if err := cflowFile("target.phys", formatIDs(me)); err != nil {
			return err
		}
		for _, n := range sizes {
			ev, err := spinGet(ctx, q)
			if err != nil || ev.Type != EventPut || ev.MLength != n {
				return fmt.Errorf("put event %+v %v, want a PUT of %d bytes", ev, err, n)
			}
		}
		if buf[0] != 1 || buf[len(buf)-1] != 1 {
			return fmt.Errorf("the long put did not land")
		}
		// Keep serving (the initiator's last ACK may still be in flight) until it
		// says it is done.
		for i := 0; ; i++ {
			if _, err := os.Stat(cflowPath("initiator.done")); err == nil {
				return nil
			}
			q.Get()
			if i&4095 == 0 && ctx.Err() != nil {
				return ctx.Err()
			}
		}
	}
	s, err := cflowWait(ctx, "target.phys")
	if err != nil {
		return err
	}
	ids, err := parseIDs(s)
	if err != nil {
		return err
	}
	src := bytes.Repeat([]byte{1}, 1<<20)
	m, err := ni.MDBind(MDSpec{Start: src, EQ: q, Options: MDEventSendDisable})
	if err != nil {
		return err
	}
	for _, n := range sizes {
		if err := Put(m, 0, n, AckReqFull, ids[0], 3, 0, 0, 0, 0); err != nil {
			return err
		}
		ev, err := spinGet(ctx, q)
		if err != nil || ev.Type != EventAck || ev.NIFail != NIOK || ev.MLength != n {
			return fmt.Errorf("ack %+v %v", ev, err)
		}
	}
	return cflowFile("initiator.done", "1")
}
