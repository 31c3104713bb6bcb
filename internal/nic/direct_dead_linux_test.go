package nic

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/goportals/goportals/eq"
	"github.com/goportals/goportals/internal/bootstrap"
)

// Direct access when a peer process dies: an initiator killed inside a window must
// not hold up the target's revocations, and a target that died must not keep
// accepting direct operations.

func init() {
	directRolesOS["direct-dead-initiator"] = directDeadInitiator
	directRolesOS["direct-dead-target"] = directDeadTarget
}

// runDyingJob launches a two-rank job in role in which a rank is killed or leaves
// on purpose: the launcher's verdict is not the test's, the ranks' output is.
func runDyingJob(t *testing.T, role string, env ...string) string {
	t.Helper()
	var out lockedBuffer
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	env = append(append(childEnv(role), "PTL_DIRECT=auto"), env...)
	bootstrap.Launch(ctx, bootstrap.LaunchConfig{N: 2, Argv: []string{os.Args[0], "-test.run=^$"},
		Env: env, Stdout: &out, Stderr: &out, Prefix: true, Timeout: 100 * time.Second, Grace: 60 * time.Second})
	t.Logf("output:\n%s", out.String())
	return out.String()
}

// TestDirectDeadInitiator: rank 0 is frozen inside a window of rank 1 (a test hook
// after its in-flight word went up) and killed there with SIGKILL; rank 1's
// LEUnlink, which revokes the window, must still return.
func TestDirectDeadInitiator(t *testing.T) {
	out := runDyingJob(t, "direct-dead-initiator")
	if !strings.Contains(out, "[1] T dead initiator ok") {
		t.Fatalf("no verdict:\n%s", out)
	}
}

// TestDirectDeadTarget: after some direct puts, rank 1 (the target) exits without
// finalizing; rank 0's puts must then complete with NI_UNDELIVERABLE, as on the
// engine's path, not be acknowledged by the dead target's memory. Rank 0 runs
// without a progress goroutine: only its own calls could make the engine notice
// the death, and direct operations make none.
func TestDirectDeadTarget(t *testing.T) {
	out := runDyingJob(t, "direct-dead-target", "PTL_PROGRESS_GOROUTINE=0")
	if !strings.Contains(out, "[0] T dead target undeliverable") {
		t.Fatalf("no verdict:\n%s", out)
	}
}

func directDeadInitiator(ctx context.Context) error {
	r, err := directSetup(ctx, directOpts)
	if err != nil {
		return err
	}
	if r.me == 0 {
		src, err := r.ni.MDBind(MDSpec{Start: make([]byte, 8)})
		if err != nil {
			return err
		}
		freeze := func() {
			fmt.Println("T frozen in the window")
			for {
				time.Sleep(time.Hour)
			}
		}
		testDirectInWindow.Store(&freeze)
		var why []string // (only this goroutine puts)
		tell := func(s string) { why = append(why, s) }
		testDirectFallback.Store(&tell)
		if err := Put(src, 0, 8, NoAckReq, r.peer, 4, 0, 0, 0, 0); err != nil {
			return err
		}
		return fmt.Errorf("the put did not go direct (%d direct operations): %q", r.ni.DirectOps(), why)
	}
	// Rank 1: find the initiator inside the window by its in-flight word.
	signal.Ignore(syscall.SIGTERM) // the launcher's teardown when rank 0 dies: finish first
	d := r.ni.direct
	nwin := int(u32At(d.tab, 8).Load())
	var pid int
	for pid == 0 {
		for s := 0; s < dtSeenSlots; s++ {
			o := dtHeader + nwin*dtWinSize + s*dtSeenSize
			if v := u64At(d.tab, o+dtSeenIn).Load(); uint32(v) != 0 {
				pid = int(v >> 32)
			}
		}
		if ctx.Err() != nil {
			return fmt.Errorf("no initiator entered the window: %w", ctx.Err())
		}
		runtime.Gosched()
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("kill %d: %w", pid, err)
	}
	if err := r.le.Unlink(); err != nil {
		return err
	}
	fmt.Println("T dead initiator ok")
	syscall.Exit(0) // the job is broken (rank 0 is gone): leave without finalizing
	return nil
}

func directDeadTarget(ctx context.Context) error {
	r, err := directSetup(ctx, directOpts)
	if err != nil {
		return err
	}
	if r.me == 1 {
		if err := r.b.Barrier(ctx); err != nil { // rank 0 went direct
			return err
		}
		syscall.Exit(0) // leave without finalizing anything
	}
	src, err := r.ni.MDBind(MDSpec{Start: make([]byte, 8), EQ: r.q, Options: MDEventSendDisable})
	if err != nil {
		return err
	}
	put := func() (Event, error) {
		if err := Put(src, 0, 8, AckReqFull, r.peer, 4, 0, 0, 0, 0); err != nil {
			return Event{}, err
		}
		return r.q.Wait(ctx)
	}
	for i := 0; i < 4; i++ {
		if ev, err := put(); err != nil || ev.Type != eq.EventAck || ev.NIFail != eq.NIOK {
			return fmt.Errorf("put to a live target: %+v %v", ev, err)
		}
	}
	if r.ni.DirectOps() == 0 {
		return fmt.Errorf("no put went direct")
	}
	if err := r.b.Barrier(ctx); err != nil {
		return err
	}
	for {
		ev, err := put()
		if err != nil {
			return fmt.Errorf("put to a dead target: %v (%d direct operations)", err, r.ni.DirectOps())
		}
		if ev.Type == eq.EventAck && ev.NIFail == eq.NIUndeliverable {
			break
		}
		if ev.Type != eq.EventAck || ev.NIFail != eq.NIOK {
			return fmt.Errorf("put to a dead target: %+v", ev)
		}
		if ctx.Err() != nil {
			return fmt.Errorf("puts to the dead target still succeed (%d direct operations)", r.ni.DirectOps())
		}
		time.Sleep(time.Millisecond) // a put every millisecond until the death shows
	}
	fmt.Println("T dead target undeliverable")
	syscall.Exit(0)
	return nil
}
