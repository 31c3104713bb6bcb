package nic

import (
	"context"
	"net"
	"testing"
	"time"
)

// localNI returns an NI of a process that belongs to no job (no runtime), closed
// when the test ends.
func localNI(t testing.TB, opts NIOptions) (*NI, *Process) {
	t.Helper()
	p, err := NewProcess(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	ni, err := p.NIInit(IfaceDefault, opts, PIDAny, nil)
	if err != nil {
		t.Fatal(err)
	}
	return ni, p
}

func TestNIDIsNeverAny(t *testing.T) {
	if n := nodeNID(); n == NIDAny {
		t.Errorf("node nid is NID_ANY")
	}
	if n := nidOf(net.IPv4(0, 0, 0xff, 0xff).To4()); n != loopbackNID {
		t.Errorf("nid of 0.0.255.255 is %#x, want 127.0.0.1's", n)
	}
	if n := nidOf(net.IPv4(10, 1, 2, 3).To4()); n != 0x0a010203 {
		t.Errorf("nid of 10.1.2.3 is %#x", n)
	}
	ni, _ := localNI(t, NIMatching|NIPhysical)
	if id, err := ni.PhysID(); err != nil || id.NID != nodeNID() {
		t.Errorf("PhysID %+v %v, want the node's nid %#x", id, err, nodeNID())
	}
}

// Before SetMap a logical NI of a process without a job has no map: GetMap is
// NO_SPACE, GetId RankAny, operations by rank ARG_INVALID. SetMap sets it once;
// a second SetMap is IGNORED and changes nothing.
func TestSetMapOnceWithoutRuntime(t *testing.T) {
	ni, _ := localNI(t, NIMatching|NILogical)
	phys, _ := localNI(t, NIMatching|NIPhysical)
	if _, err := ni.Map(); err == nil {
		t.Fatal("GetMap before SetMap succeeded")
	} else {
		wantErrno(t, "GetMap before SetMap", err, NoSpace)
	}
	if id, err := ni.ID(); err != nil || id.Rank != RankAny {
		t.Errorf("GetId before SetMap: %+v %v, want RankAny", id, err)
	}
	m := mustMD(t, ni, MDSpec{Start: make([]byte, 8)})
	wantErrno(t, "put by rank before SetMap", Put(m, 0, 8, NoAckReq, ProcessID{Rank: 0}, 0, 0, 0, 0, 0), ArgInvalid)
	wantErrno(t, "SetMap on a physical NI", phys.SetMap([]ProcessID{phys.physID()}), ArgInvalid)
	wantErrno(t, "GetMap on a physical NI", func() error { _, err := phys.Map(); return err }(), ArgInvalid)
	wantErrno(t, "empty SetMap", ni.SetMap(nil), ArgInvalid)

	me := ni.physID()
	other := ProcessID{NID: me.NID, PID: (me.PID + 1) % PIDAny} // need not exist yet
	if err := ni.SetMap([]ProcessID{other, me}); err != nil {
		t.Fatalf("SetMap: %v", err)
	}
	if id, err := ni.ID(); err != nil || id.Rank != 1 {
		t.Errorf("GetId: %+v %v, want rank 1", id, err)
	}
	wantErrno(t, "second SetMap", ni.SetMap([]ProcessID{me}), Ignored)
	got, err := ni.Map()
	if err != nil || len(got) != 2 || got[0].PID != other.PID || got[1].PID != me.PID {
		t.Errorf("map after an ignored SetMap: %+v %v", got, err)
	}
	wantErrno(t, "put to a rank beyond the map", Put(m, 0, 8, NoAckReq, ProcessID{Rank: 2}, 0, 0, 0, 0, 0), ArgInvalid)
}

// A process of a job starts its logical NIs with the job's map; SetMap still
// replaces it once.
func TestJobMapReplacedBySetMapOnce(t *testing.T) {
	nis, procs := rulesJob(t, 2, NIMatching|NILogical, PIDAny, nil)
	jm := procs[0].JobMap()
	got, err := nis[0].Map()
	if err != nil || len(got) != 2 || got[0].PID != jm[0].PID || got[1].PID != jm[1].PID {
		t.Fatalf("map from the job: %+v %v, job %+v", got, err, jm)
	}
	rev := []ProcessID{jm[1], jm[0]}
	if err := nis[0].SetMap(rev); err != nil {
		t.Fatalf("SetMap over the job's map: %v", err)
	}
	wantErrno(t, "second SetMap", nis[0].SetMap(jm), Ignored)
	if id, _ := nis[0].ID(); id.Rank != 1 {
		t.Errorf("rank %d after SetMap, want 1", id.Rank)
	}
}

// Connections open on first use, by physical id alone; a physical NI needs no
// map and no job.
func TestLazyConnectionByPhysID(t *testing.T) {
	tgt, _ := localNI(t, NIMatching|NIPhysical)
	ini, _ := localNI(t, NIMatching|NIPhysical)
	if n := peersTo(ini, tgt) + peersTo(tgt, ini); n != 0 {
		t.Fatalf("%d connections between the NIs before any operation", n)
	}
	q := mustEQn(t, tgt, 8)
	if _, err := tgt.PTAlloc(0, q, 1); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 8)
	if _, err := tgt.MEAppend(1, MESpec{Start: buf, UID: UIDAny, Options: MEOpPut | MEEventLinkDisable,
		MatchID: ProcessID{NID: NIDAny, PID: PIDAny}}, PriorityList, 0); err != nil {
		t.Fatal(err)
	}
	iq := mustEQn(t, ini, 8)
	m := mustMD(t, ini, MDSpec{Start: []byte("lazyconn"), EQ: iq, Options: MDEventSendDisable})
	for i := 0; i < 2; i++ {
		if err := Put(m, 0, 8, AckReqFull, tgt.physID(), 1, 0, 0, 0, 0); err != nil {
			t.Fatal(err)
		}
		if ev := waitEvent(t, iq); ev.Type != EventAck || ev.NIFail != NIOK {
			t.Fatalf("ack %+v", ev)
		}
		if ev := waitEvent(t, q); ev.Type != EventPut || ev.Initiator.PID != ini.physID().PID || ev.Initiator.NID != ini.physID().NID {
			t.Fatalf("put event %+v, want one from %+v", ev, ini.physID())
		}
	}
	if string(buf) != "lazyconn" {
		t.Errorf("target holds %q", buf)
	}
	if n := peersTo(ini, tgt); n != 1 {
		t.Errorf("initiator has %d connections to the target after two puts, want 1", n)
	}
}

// peersTo counts from's connections to to.
func peersTo(from, to *NI) int {
	n := 0
	for _, pr := range from.peerList() {
		if pr.id.PID == to.self.PID && pr.id.NID == to.self.NID {
			n++
		}
	}
	return n
}

// A target that cannot be reached (another nid, a pid no process holds, a process
// without an NI of that kind) completes the operation with NI_UNDELIVERABLE.
func TestUnreachableTargetsAreUndeliverable(t *testing.T) {
	ini, _ := localNI(t, NIMatching|NIPhysical)
	other, _ := localNI(t, NINoMatching|NIPhysical) // a process with no matching NI
	iq := mustEQn(t, ini, 16)
	m := mustMD(t, ini, MDSpec{Start: make([]byte, 2048), EQ: iq})
	me := ini.physID()
	free := ProcessID{NID: me.NID, PID: (me.PID + 7) % PIDAny}
	for {
		pidTable.mu.Lock()
		held := pidTable.held[free.PID]
		pidTable.mu.Unlock()
		if !held {
			break
		}
		free.PID = (free.PID + 1) % PIDAny
	}
	free.PID = cflowFreePID(free.PID - 1)
	for _, tc := range []struct {
		name string
		id   ProcessID
	}{
		{"another node", ProcessID{NID: me.NID ^ 0x100, PID: me.PID}},
		{"a free pid", free},
		{"no NI of that kind", other.physID()},
	} {
		for _, n := range []uint64{8, 2048} {
			if err := Put(m, 0, n, AckReqFull, tc.id, 0, 0, 0, 0, 0); err != nil {
				t.Fatalf("%s: put: %v", tc.name, err)
			}
			if ev := waitEvent(t, iq); ev.Type != EventSend || ev.NIFail != NIUndeliverable {
				t.Errorf("%s: %d bytes: first event %+v, want SEND with NI_UNDELIVERABLE", tc.name, n, ev)
			}
			if ev := waitEvent(t, iq); ev.Type != EventAck || ev.NIFail != NIUndeliverable {
				t.Errorf("%s: %d bytes: ack %+v, want NI_UNDELIVERABLE", tc.name, n, ev)
			}
			if err := Get(m, 0, n, tc.id, 0, 0, 0, 0); err != nil {
				t.Fatalf("%s: get: %v", tc.name, err)
			}
			if ev := waitEvent(t, iq); ev.Type != EventReply || ev.NIFail != NIUndeliverable {
				t.Errorf("%s: %d bytes: reply %+v, want NI_UNDELIVERABLE", tc.name, n, ev)
			}
		}
	}
	if err := m.Release(); err != nil {
		t.Errorf("MD release after failed operations: %v", err)
	}
}

// BenchmarkConnect measures opening a connection: the rendezvous and both queue
// pairs (in this OS process: the request is handed over directly).
func BenchmarkConnect(b *testing.B) {
	tgt, _ := localNI(b, NIMatching|NIPhysical)
	for i := 0; i < b.N; i++ {
		ini, p := localNI(b, NIMatching|NIPhysical)
		mustPeer(b, ini, tgt)
		b.StopTimer()
		p.Close()
		b.StartTimer()
	}
}

// A process whose application makes no call still answers connection requests
// through its socket (its listener goroutine): the request goes over the node's
// rendezvous, not the in-process table.
func TestRendezvousSocketServedWithoutCalls(t *testing.T) {
	tgt, _ := localNI(t, NIMatching|NIPhysical)
	ini, _ := localNI(t, NIMatching|NIPhysical)
	time.Sleep(50 * time.Millisecond) // the target's progress goroutine goes to sleep
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, tc := range []struct {
		slot uint16
		want uint32
	}{{uint16(tgt.slot), connFailed}, {3, connNoNI}} {
		nc, err := ini.dialNode(ctx, tgt.physID().PID)
		if err != nil {
			t.Fatal(err)
		}
		// A request whose queue pair address is garbage: the target cannot connect.
		req := connectRequest{slot: tc.slot, from: ini.physID(), addr: []byte("not an address")}
		rep, err := nc.exchange(ctx, ini, tgt.physID().PID, &req)
		nc.close()
		if err != nil || rep.status != tc.want {
			t.Errorf("slot %d: answer %+v %v, want status %d", tc.slot, rep, err, tc.want)
		}
	}
}
