package nic

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/goportals/goportals/eq"
	"github.com/goportals/goportals/internal/bootstrap"
	"go.uber.org/goleak"
)

// The multi-process tests launch this test binary as the ranks of a job
// (PORTALS_TEST_ROLE selects what they do); each rank joins through the real
// bootstrap and talks to the other over the soft provider between processes.

func TestMain(m *testing.M) {
	if role := os.Getenv("PORTALS_TEST_ROLE"); role != "" {
		if code, ok := runHarnessRole(role); ok {
			os.Exit(code)
		}
		if code, ok := runDirectRole(role); ok {
			os.Exit(code)
		}
		if err := runRole(role); err != nil {
			fmt.Fprintln(os.Stderr, "rank failed:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	before := goleak.IgnoreCurrent()
	code := m.Run()
	if code == 0 {
		// Every NI, trigger runner and provider goroutine must be gone once the
		// tests closed their processes.
		if err := goleak.Find(before); err != nil {
			fmt.Fprintln(os.Stderr, "goroutine leak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// TestMultiProcessPutGetAtomic: rank 0 puts, gets and runs atomics against rank 1.
func TestMultiProcessPutGetAtomic(t *testing.T) {
	out := launch(t, "putget")
	if !strings.Contains(out, "[0] ok") {
		t.Fatalf("rank 0 did not finish:\n%s", out)
	}
}

// TestMultiProcessDeadPeer: rank 1 exits without finalizing; rank 0's operations
// to it complete with NI_UNDELIVERABLE.
func TestMultiProcessDeadPeer(t *testing.T) {
	out := launch(t, "deadpeer")
	if !strings.Contains(out, "[0] undeliverable") {
		t.Fatalf("rank 0 did not see the peer die:\n%s", out)
	}
}

func runRole(role string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	b, err := bootstrap.Open(ctx)
	if err != nil {
		return err
	}
	defer b.Close()
	p, err := NewProcess(b, nil)
	if err != nil {
		return err
	}
	defer p.Close()
	ni, err := p.NIInit(IfaceDefault, NIMatching|NIPhysical, PIDAny, nil)
	if err != nil {
		return err
	}
	me := b.Rank()
	peer := p.JobMap()[1-me]
	q, err := ni.EQAlloc(256)
	if err != nil {
		return err
	}
	ct, err := ni.CTAlloc()
	if err != nil {
		return err
	}
	if _, err := ni.PTAlloc(0, q, 2); err != nil {
		return err
	}
	target := make([]byte, 1<<20)
	if _, err := ni.MEAppend(2, MESpec{Start: target, CT: ct, UID: UIDAny, Options: MEOpPut | MEOpGet | MEEventCTComm |
		MEEventLinkDisable, MatchID: ProcessID{NID: NIDAny, PID: PIDAny}}, PriorityList, 0); err != nil {
		return err
	}
	if role == "deadpeer" && me == 0 {
		// Connect before rank 1 leaves: the test is about a connection that dies.
		if pr := ni.connectTo(peer); pr.broken.Load() {
			return fmt.Errorf("connecting to rank 1: %v", pr.why)
		}
	}
	if err := b.Barrier(ctx); err != nil {
		return err
	}
	switch role {
	case "putget":
		if me == 1 {
			_, err := ct.Wait(ctx, 4) // 2 puts, 2 gets
			if err == nil {
				err = b.Barrier(ctx) // rank 0 checks the atomics before we exit
			}
			return err
		}
		for _, size := range []int{8, 1 << 20} {
			src := make([]byte, size)
			for i := range src {
				src[i] = byte(i * 13)
			}
			m, err := ni.MDBind(MDSpec{Start: src, EQ: q, Options: MDEventSendDisable})
			if err != nil {
				return err
			}
			if err := Put(m, 0, uint64(size), AckReqFull, peer, 2, 0, 0, 1, 0); err != nil {
				return err
			}
			if ev, err := q.Wait(ctx); err != nil || ev.Type != eq.EventAck || ev.NIFail != eq.NIOK || ev.MLength != uint64(size) {
				return fmt.Errorf("put %d: %+v %v", size, ev, err)
			}
			back := make([]byte, size)
			g, err := ni.MDBind(MDSpec{Start: back, EQ: q})
			if err != nil {
				return err
			}
			if err := Get(g, 0, uint64(size), peer, 2, 0, 0, 2); err != nil {
				return err
			}
			if ev, err := q.Wait(ctx); err != nil || ev.Type != eq.EventReply || !bytes.Equal(back, src) {
				return fmt.Errorf("get %d: %+v %v", size, ev, err)
			}
		}
		// fetch-add on the first word of rank 1's buffer (which holds our 1 MiB put).
		one := make([]byte, 8)
		binary.LittleEndian.PutUint64(one, 1)
		old := make([]byte, 8)
		pm, err := ni.MDBind(MDSpec{Start: one, EQ: q, Options: MDEventSendDisable})
		if err != nil {
			return err
		}
		gm, err := ni.MDBind(MDSpec{Start: old, EQ: q})
		if err != nil {
			return err
		}
		if err := FetchAtomic(gm, 0, pm, 0, 8, peer, 2, 0, 0, 3, 0, eq.OpSum, eq.Uint64); err != nil {
			return err
		}
		if ev, err := q.Wait(ctx); err != nil || ev.Type != eq.EventReply {
			return fmt.Errorf("fetch-add: %+v %v", ev, err)
		}
		want := binary.LittleEndian.Uint64([]byte{0, 13, 26, 39, 52, 65, 78, 91})
		if got := binary.LittleEndian.Uint64(old); got != want {
			return fmt.Errorf("fetch-add returned %#x, want %#x", got, want)
		}
		fmt.Println("ok")
		return b.Barrier(ctx)
	case "deadpeer":
		if me == 1 {
			// Leave without finalizing anything. syscall.Exit, not os.Exit: under
			// -race, os.Exit's race finalization can wait forever on the progress
			// threads parked in futex system calls.
			syscall.Exit(0)
		}
		// Wait until this NI has seen the connection to rank 1 fail (the provider's
		// pidfd watch notices the exit and flushes the queue pair).
		pr := peerByID(ni, peer)
		for {
			pr.sendMu.Lock()
			failed := pr.failed
			pr.sendMu.Unlock()
			if failed {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("the connection to the exited rank 1 never failed: %w", ctx.Err())
			case <-time.After(time.Millisecond):
			}
		}
		m, err := ni.MDBind(MDSpec{Start: make([]byte, 64), EQ: q, Options: MDEventSendDisable})
		if err != nil {
			return err
		}
		if err := Put(m, 0, 64, AckReqFull, peer, 2, 0, 0, 0, 0); err != nil {
			return err
		}
		ev, err := q.Wait(ctx)
		if err != nil || ev.Type != eq.EventAck || ev.NIFail != eq.NIUndeliverable {
			return fmt.Errorf("ack from a dead peer: %+v %v", ev, err)
		}
		fmt.Println("undeliverable")
		return nil
	}
	return fmt.Errorf("unknown role %q", role)
}
