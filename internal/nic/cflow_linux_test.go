package nic

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The C-shaped client flow: two processes that belong to no job (no launcher, no
// runtime) bootstrap themselves as a client with its own launcher does: each
// initializes its NIs locally, they swap PhysID results out of band (files here),
// set the logical map, and then put and get by rank over a descriptor covering all
// of memory into a list entry over a raw address range. A physical NI is also
// reached by (nid, pid) alone, without any map.

func init() {
	harnessRoles["cflow-target"] = func(string) int { return cflowRole("target") }
	harnessRoles["cflow-initiator"] = func(string) int { return cflowRole("initiator") }
}

// cflowEnv is the environment of a child: the parent's without any launcher
// variable, so nothing can come from a job runtime.
func cflowEnv(role, dir string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "PTL_RANK=") || strings.HasPrefix(kv, "PTL_SIZE=") ||
			strings.HasPrefix(kv, "PTL_BOOTSTRAP_ADDR=") || strings.HasPrefix(kv, "PTL_JOB_KEY=") ||
			strings.HasPrefix(kv, "PMI_") || strings.HasPrefix(kv, "PORTALS_TEST_ROLE=") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "PORTALS_TEST_ROLE=cflow-"+role, "CFLOW_DIR="+dir)
}

func TestCFlowTwoProcessesWithoutRuntime(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var outs [2]bytes.Buffer
	var cmds [2]*exec.Cmd
	for i, role := range []string{"target", "initiator"} {
		c := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
		c.Env = cflowEnv(role, dir)
		c.Stdout, c.Stderr = &outs[i], &outs[i]
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[i] = c
	}
	var errs [2]error
	for i, c := range cmds {
		errs[i] = c.Wait()
	}
	for i, role := range []string{"target", "initiator"} {
		if errs[i] != nil || !strings.Contains(outs[i].String(), "cflow "+role+" ok") {
			t.Errorf("%s: %v\n%s", role, errs[i], outs[i].String())
		}
	}
}

// cflowFile writes name in the exchange directory (atomically: rename).
func cflowFile(name, content string) error {
	dir := os.Getenv("CFLOW_DIR")
	tmp := filepath.Join(dir, "."+name)
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, name))
}

// cflowPath is the path of name in the exchange directory.
func cflowPath(name string) string { return filepath.Join(os.Getenv("CFLOW_DIR"), name) }

// cflowWait waits for file name and returns its content.
func cflowWait(ctx context.Context, name string) (string, error) {
	p := cflowPath(name)
	for {
		if b, err := os.ReadFile(p); err == nil {
			return string(b), nil
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("waiting for %s: %w", name, ctx.Err())
		case <-time.After(2 * time.Millisecond):
		}
	}
}

func formatIDs(ids ...ProcessID) string {
	var s []string
	for _, id := range ids {
		s = append(s, fmt.Sprintf("%d:%d", id.NID, id.PID))
	}
	return strings.Join(s, " ")
}

func parseIDs(s string) ([]ProcessID, error) {
	var ids []ProcessID
	for _, f := range strings.Fields(s) {
		a, b, ok := strings.Cut(f, ":")
		nid, err1 := strconv.ParseUint(a, 10, 32)
		pid, err2 := strconv.ParseUint(b, 10, 32)
		if !ok || err1 != nil || err2 != nil {
			return nil, fmt.Errorf("bad id %q", f)
		}
		ids = append(ids, ProcessID{NID: NID(nid), PID: PID(pid)})
	}
	return ids, nil
}

// cflowPattern is the byte at offset i of what the initiator puts.
func cflowPattern(i int) byte { return byte(i*7 + 3) }

func cflowRole(role string) int {
	if err := cflowRun(role); err != nil {
		fmt.Fprintf(os.Stderr, "cflow %s: %v\n", role, err)
		return 1
	}
	fmt.Printf("cflow %s ok\n", role)
	return 0
}

// The sizes the initiator moves: one eager put and one long put, into a raw
// region of regionLen bytes at the target.
const (
	cflowSmall  = 64
	cflowLarge  = 3 * 4096
	cflowRegion = 4 * 4096
)

func cflowRun(role string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p, err := NewProcess(nil, nil) // no runtime: nothing but this process
	if err != nil {
		return err
	}
	defer p.Close()
	logical, err := p.NIInit(IfaceDefault, NINoMatching|NILogical, PIDAny, nil)
	if err != nil {
		return err
	}
	physical, err := p.NIInit(IfaceDefault, NIMatching|NIPhysical, PIDAny, nil)
	if err != nil {
		return err
	}
	if id, err := logical.ID(); err != nil || id.Rank != RankAny {
		return fmt.Errorf("GetId before SetMap: %+v %v, want RankAny", id, err)
	}
	if _, err := logical.Map(); !errors.Is(err, NoSpace) {
		return fmt.Errorf("GetMap before SetMap: %v, want NO_SPACE", err)
	}
	me, err := logical.PhysID()
	if err != nil {
		return err
	}
	// Out of band: this process's physical id, then the peer's.
	if err := cflowFile(role+".phys", formatIDs(me)); err != nil {
		return err
	}
	other := map[string]string{"target": "initiator", "initiator": "target"}[role]
	s, err := cflowWait(ctx, other+".phys")
	if err != nil {
		return err
	}
	peerIDs, err := parseIDs(s)
	if err != nil || len(peerIDs) != 1 {
		return fmt.Errorf("peer id %q: %v", s, err)
	}
	// Rank 0 is the target, rank 1 the initiator, on both sides.
	m := []ProcessID{me, peerIDs[0]}
	if role == "initiator" {
		m = []ProcessID{peerIDs[0], me}
	}
	if err := logical.SetMap(m); err != nil {
		return fmt.Errorf("SetMap: %w", err)
	}
	if err := logical.SetMap(m); !errors.Is(err, Ignored) {
		return fmt.Errorf("second SetMap: %v, want IGNORED", err)
	}
	wantRank := Rank(0)
	if role == "initiator" {
		wantRank = 1
	}
	if id, err := logical.ID(); err != nil || id.Rank != wantRank {
		return fmt.Errorf("GetId: %+v %v, want rank %d", id, err, wantRank)
	}
	if role == "target" {
		return cflowTarget(ctx, logical, physical)
	}
	return cflowInitiator(ctx, logical, physical, peerIDs[0])
}

// cflowMap maps n bytes of anonymous memory outside the Go heap.
func cflowMap(n int) ([]byte, error) {
	return unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
}

func addrOfBytes(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }

func cflowTarget(ctx context.Context, logical, physical *NI) error {
	region, err := cflowMap(cflowRegion)
	if err != nil {
		return err
	}
	for i := range region {
		region[i] = 0xee
	}
	base := addrOfBytes(region)
	q, err := logical.EQAlloc(64)
	if err != nil {
		return err
	}
	pt, err := logical.PTAlloc(0, q, PTAny)
	if err != nil {
		return err
	}
	if _, err := logical.LEAppend(pt, LESpec{Addr: base, Length: cflowRegion, UID: UIDAny,
		Options: MEOpPut | MEOpGet | MEEventLinkDisable}, PriorityList, 0); err != nil {
		return err
	}
	// The physical NI: a match entry over a raw range too.
	pq, err := physical.EQAlloc(16)
	if err != nil {
		return err
	}
	ppt, err := physical.PTAlloc(0, pq, 5)
	if err != nil {
		return err
	}
	physMem, err := cflowMap(4096)
	if err != nil {
		return err
	}
	if _, err := physical.MEAppend(ppt, MESpec{Addr: addrOfBytes(physMem), Length: 4096, UID: UIDAny,
		Options: MEOpPut | MEEventLinkDisable, MatchID: ProcessID{NID: NIDAny, PID: PIDAny}, MatchBits: 9}, PriorityList, 0); err != nil {
		return err
	}
	if err := cflowFile("target.ready", "1"); err != nil {
		return err
	}
	// Two puts and a get arrive on the logical NI: their events carry the address
	// of the data in the raw region; one put arrives on the physical NI.
	want := []struct {
		kind EventKind
		off  uint64
		n    uint64
	}{{EventPut, 0, cflowSmall}, {EventPut, 4096, cflowLarge}, {EventGet, 0, cflowRegion}}
	for _, w := range want {
		ev, err := q.Wait(ctx)
		if err != nil {
			return err
		}
		if ev.Type != w.kind || ev.NIFail != NIOK || ev.MLength != w.n || ev.Start != w.off ||
			ev.Addr != base+uintptr(w.off) || ev.Initiator.Rank != 1 {
			return fmt.Errorf("target event %+v, want %v of %d bytes at offset %d (address %#x) from rank 1",
				ev, w.kind, w.n, w.off, base+uintptr(w.off))
		}
	}
	ev, err := pq.Wait(ctx)
	if err != nil {
		return err
	}
	if ev.Type != EventPut || ev.NIFail != NIOK || ev.MLength != 8 || ev.Addr != addrOfBytes(physMem) {
		return fmt.Errorf("physical NI event %+v", ev)
	}
	if _, err := cflowWait(ctx, "initiator.done"); err != nil {
		return err
	}
	for i := 0; i < cflowRegion; i++ {
		want := byte(0xee)
		switch {
		case i < cflowSmall:
			want = cflowPattern(i)
		case i >= 4096 && i < 4096+cflowLarge:
			want = cflowPattern(i)
		}
		if region[i] != want {
			return fmt.Errorf("region byte %d is %#x, want %#x", i, region[i], want)
		}
	}
	if string(physMem[:8]) != "physical" {
		return fmt.Errorf("physical put left %q", physMem[:8])
	}
	return nil
}

func cflowInitiator(ctx context.Context, logical, physical *NI, target ProcessID) error {
	q, err := logical.EQAlloc(64)
	if err != nil {
		return err
	}
	// One descriptor over all of memory: local offsets are addresses.
	all, err := logical.MDBind(MDSpec{Addr: 0, Length: math.MaxUint64, EQ: q, Options: MDEventSendDisable})
	if err != nil {
		return err
	}
	if all.Len() != math.MaxUint64 {
		return fmt.Errorf("MD length %d", all.Len())
	}
	src, err := cflowMap(cflowRegion)
	if err != nil {
		return err
	}
	for i := range src {
		src[i] = cflowPattern(i)
	}
	back, err := cflowMap(cflowRegion)
	if err != nil {
		return err
	}
	if _, err := cflowWait(ctx, "target.ready"); err != nil {
		return err
	}
	s := uint64(addrOfBytes(src))
	for _, put := range []struct{ off, n uint64 }{{0, cflowSmall}, {4096, cflowLarge}} {
		if err := Put(all, s+put.off, put.n, AckReqFull, ProcessID{Rank: 0}, 0, 0, put.off, 0, 0); err != nil {
			return fmt.Errorf("put of %d bytes: %w", put.n, err)
		}
		ev, err := q.Wait(ctx)
		if err != nil || ev.Type != EventAck || ev.NIFail != NIOK || ev.MLength != put.n {
			return fmt.Errorf("ack of the put of %d bytes: %+v %v", put.n, ev, err)
		}
	}
	b := uint64(addrOfBytes(back))
	if err := Get(all, b, cflowRegion, ProcessID{Rank: 0}, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("get: %w", err)
	}
	ev, err := q.Wait(ctx)
	if err != nil || ev.Type != EventReply || ev.NIFail != NIOK || ev.MLength != cflowRegion {
		return fmt.Errorf("reply: %+v %v", ev, err)
	}
	for i := 0; i < cflowRegion; i++ {
		want := byte(0xee)
		if i < cflowSmall || (i >= 4096 && i < 4096+cflowLarge) {
			want = cflowPattern(i)
		}
		if back[i] != want {
			return fmt.Errorf("got byte %d = %#x, want %#x", i, back[i], want)
		}
	}
	// A physical NI needs no map: the target's physical id is enough.
	pq, err := physical.EQAlloc(16)
	if err != nil {
		return err
	}
	word := []byte("physical")
	pm, err := physical.MDBind(MDSpec{Start: word, EQ: pq, Options: MDEventSendDisable})
	if err != nil {
		return err
	}
	if err := Put(pm, 0, 8, AckReqFull, target, 5, 9, 0, 0, 0); err != nil {
		return err
	}
	if ev, err := pq.Wait(ctx); err != nil || ev.Type != EventAck || ev.NIFail != NIOK || ev.MLength != 8 {
		return fmt.Errorf("ack of the physical put: %+v %v", ev, err)
	}
	// A pid nobody holds on this node, and a node that is not this one: the
	// operations complete with NI_UNDELIVERABLE.
	for _, gone := range []ProcessID{{NID: target.NID, PID: cflowFreePID(target.PID)}, {NID: target.NID ^ 1, PID: target.PID}} {
		if err := Put(pm, 0, 8, AckReqFull, gone, 5, 9, 0, 0, 0); err != nil {
			return fmt.Errorf("put to %d:%d: %w", gone.NID, gone.PID, err)
		}
		if ev, err := pq.Wait(ctx); err != nil || ev.Type != EventAck || ev.NIFail != NIUndeliverable {
			return fmt.Errorf("ack of a put to %d:%d: %+v %v, want NI_UNDELIVERABLE", gone.NID, gone.PID, ev, err)
		}
	}
	return cflowFile("initiator.done", "1")
}

// cflowFreePID returns a pid near p that no process of the node holds.
func cflowFreePID(p PID) PID {
	for d := PID(1); d < 1000; d++ {
		c := (p + d) % PIDAny
		fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return c
		}
		err = unix.Connect(fd, &unix.SockaddrUnix{Name: rendezvousName(c)})
		unix.Close(fd)
		if err != nil {
			return c
		}
	}
	return p
}
