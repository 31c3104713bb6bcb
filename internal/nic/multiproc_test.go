package nic

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"maps"
	"os"
	"slices"
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
		if code, ok := runKeyRole(role); ok {
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

// TestMultiProcessPutGetAtomic: each rank puts, gets and runs atomics against the other.
func TestMultiProcessPutGetAtomic(t *testing.T) {
	out := launch(t, "putget")
	for r := 0; r < 2; r++ {
		if !strings.Contains(out, fmt.Sprintf("[%d] ok", r)) {
			t.Fatalf("rank %d did not finish:\n%s", r, out)
		}
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

// region is the part of a rank's target buffer that one source rank writes.
const region = 1 << 20

// fillPair writes the bytes rank src sends to rank dst: each pair its own pattern.
func fillPair(b []byte, src, dst int) {
	for i := range b {
		b[i] = byte(i*13 + src*7 + dst*3 + 1)
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
	me, n := b.Rank(), b.Size()
	ids := p.JobMap()
	// q takes this rank's own operations' events; the portal table entry's
	// events (other ranks' operations here) are counted by ct only.
	q, err := ni.EQAlloc(256)
	if err != nil {
		return err
	}
	tq, err := ni.EQAlloc(16)
	if err != nil {
		return err
	}
	ct, err := ni.CTAlloc()
	if err != nil {
		return err
	}
	if _, err := ni.PTAlloc(0, tq, 2); err != nil {
		return err
	}
	// Rank s writes region s of every other rank's buffer.
	target := make([]byte, n*region)
	if _, err := ni.MEAppend(2, MESpec{Start: target, CT: ct, UID: UIDAny, Options: MEOpPut | MEOpGet | MEEventCTComm |
		MEEventCommDisable | MEEventLinkDisable, MatchID: ProcessID{NID: NIDAny, PID: PIDAny}}, PriorityList, 0); err != nil {
		return err
	}
	dies := n - 1 // the rank that leaves in the dead-peer role
	if role == "deadpeer" && me != dies {
		// Connect before the rank leaves: the test is about a connection that dies.
		if pr := ni.connectTo(ids[dies]); pr.broken.Load() {
			return fmt.Errorf("connecting to rank %d: %v", dies, pr.why)
		}
	}
	if err := b.Barrier(ctx); err != nil {
		return err
	}
	switch role {
	case "putget":
		// Every rank puts, gets and fetch-adds to every other: in two namespaces
		// that is the shared-memory path inside one and the TCP path across.
		for k := 1; k < n; k++ {
			peer := (me + k) % n
			if err := putGetPeer(ctx, ni, q, me, peer, ids[peer]); err != nil {
				return fmt.Errorf("rank %d to rank %d: %w", me, peer, err)
			}
		}
		// The others' 2 puts, 2 gets and one fetch-add each.
		if _, err := ct.Wait(ctx, uint64(5*(n-1))); err != nil {
			return err
		}
		if err := b.Barrier(ctx); err != nil {
			return err
		}
		// What every other rank left here, byte for byte: its 1 MiB put, whose
		// first word it then incremented.
		for src := 0; src < n; src++ {
			if src == me {
				continue
			}
			want := make([]byte, region)
			fillPair(want, src, me)
			binary.LittleEndian.PutUint64(want, binary.LittleEndian.Uint64(want)+1)
			if got := target[src*region : (src+1)*region]; !bytes.Equal(got, want) {
				return fmt.Errorf("region of rank %d differs from what it wrote at byte %d", src, firstDiff(got, want))
			}
		}
		fmt.Printf("ok paths%s\n", peerPaths(ni, ids, me))
		return b.Barrier(ctx)
	case "deadpeer":
		if me == dies {
			// Leave without finalizing anything. syscall.Exit, not os.Exit: under
			// -race, os.Exit's race finalization can wait forever on the progress
			// threads parked in futex system calls.
			syscall.Exit(0)
		}
		// Wait until this NI has seen the connection to the rank fail (the
		// provider's pidfd watch or the TCP stream's end notices the exit and
		// flushes the queue pair).
		pr := peerByID(ni, ids[dies])
		for {
			pr.sendMu.Lock()
			failed := pr.failed
			pr.sendMu.Unlock()
			if failed {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("the connection to the exited rank %d never failed: %w", dies, ctx.Err())
			case <-time.After(time.Millisecond):
			}
		}
		m, err := ni.MDBind(MDSpec{Start: make([]byte, 64), EQ: q, Options: MDEventSendDisable})
		if err != nil {
			return err
		}
		if err := Put(m, 0, 64, AckReqFull, ids[dies], 2, 0, 0, 0, 0); err != nil {
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

// putGetPeer puts 8 bytes and 1 MiB into rank me's region of peer's buffer and
// gets each back, then fetch-adds one to the region's first word: every byte
// checked.
func putGetPeer(ctx context.Context, ni *NI, q *EQ, me, peerRank int, peer ProcessID) error {
	off := uint64(me * region)
	for _, size := range []int{8, region} {
		src := make([]byte, size)
		fillPair(src, me, peerRank)
		m, err := ni.MDBind(MDSpec{Start: src, EQ: q, Options: MDEventSendDisable})
		if err != nil {
			return err
		}
		if err := Put(m, 0, uint64(size), AckReqFull, peer, 2, 0, off, 1, 0); err != nil {
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
		if err := Get(g, 0, uint64(size), peer, 2, 0, off, 2); err != nil {
			return err
		}
		if ev, err := q.Wait(ctx); err != nil || ev.Type != eq.EventReply || !bytes.Equal(back, src) {
			return fmt.Errorf("get %d: %+v %v (first difference at %d)", size, ev, err, firstDiff(back, src))
		}
		if err := m.Release(); err != nil {
			return err
		}
		if err := g.Release(); err != nil {
			return err
		}
	}
	// Fetch-add on the first word of our region (which holds our 1 MiB put).
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
	if err := FetchAtomic(gm, 0, pm, 0, 8, peer, 2, 0, off, 3, 0, eq.OpSum, eq.Uint64); err != nil {
		return err
	}
	if ev, err := q.Wait(ctx); err != nil || ev.Type != eq.EventReply {
		return fmt.Errorf("fetch-add: %+v %v", ev, err)
	}
	first := make([]byte, 8)
	fillPair(first, me, peerRank)
	if got, want := binary.LittleEndian.Uint64(old), binary.LittleEndian.Uint64(first); got != want {
		return fmt.Errorf("fetch-add returned %#x, want %#x", got, want)
	}
	return nil
}

// peerPaths says which path carries the traffic to each other rank, as
// " rank:path" items in rank order (the paths of its connections, joined by "+").
func peerPaths(ni *NI, ids []ProcessID, me int) string {
	var b strings.Builder
	for r, id := range ids {
		if r == me {
			continue
		}
		seen := map[string]bool{}
		for _, pr := range ni.peerList() {
			if pr == nil || pr.qp == nil || keyOf(pr.id) != keyOf(id) {
				continue
			}
			if q, ok := pr.qp.(interface{ Path() string }); ok {
				seen[q.Path()] = true
			}
		}
		fmt.Fprintf(&b, " %d:%s", r, strings.Join(slices.Sorted(maps.Keys(seen)), "+"))
	}
	return b.String()
}

// firstDiff is the index of the first byte where a and b differ (-1: none).
func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	if len(a) != len(b) {
		return min(len(a), len(b))
	}
	return -1
}
