package rma

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"time"

	"github.com/goportals/goportals/portals"
)

// This file is rma's only contact with the job: which rank this process is, how
// many there are, the network interface every window lives on, and the two
// collectives the windows need (allgather of one number, and so a barrier).
//
// Today the launcher's bootstrap belongs to portals.Init, which joins the job, and
// a logical NI's NIInit connects the ranks and sets its map from the job. The
// collectives therefore run over Portals itself, on two portal table entries of
// that NI (ctlPT and ctlPT+1, used by alternate collectives): each rank exposes
// an array of slots, one per rank, on each, and puts its value into its slot at
// every peer; a counting event per entry tells when all peers' values are in.
// When package job provides Join, Barrier, an exchange and Map, this file
// changes and nothing else does.

// ctlPT and ctlPT+1 are the portal table indexes of the collectives' slots;
// windows use the indexes above them.
const ctlPT portals.PTIndex = 0

// firstWindowPT is the lowest index a window takes.
const firstWindowPT = ctlPT + 2

// jobState is this process's membership in the job, shared by its windows.
type jobState struct {
	ni         *portals.NI
	rank, size int

	coll   sync.Mutex // one collective at a time, in the same order on every rank
	epoch  uint64     // collectives completed
	slots  [2][]byte  // by epoch parity: size 8-byte slots, exposed on ctlPT+parity
	le     [2]*portals.LE
	ct     [2]*portals.CT // count the peers' puts into slots[parity]
	rounds [2]uint64      // collectives completed, by parity
	out    []byte         // the 8 bytes this rank sends
	outMD  *portals.MD
	acks   *portals.EQ // send and acknowledgment events of the puts from out
	broken error       // set when a collective was abandoned midway

	pts  map[portals.PTIndex]bool // window indexes in use
	refs int
}

var joined struct {
	mu     sync.Mutex
	j      *jobState
	inited bool // portals.Init succeeded; the process stays in the job until it exits
}

// acquireJob joins the job on the first call (initializing Portals and the NI
// the windows share) and counts a reference; releaseJob drops it.
func acquireJob(ctx context.Context) (*jobState, error) {
	joined.mu.Lock()
	defer joined.mu.Unlock()
	if joined.j != nil {
		joined.j.refs++
		return joined.j, nil
	}
	j, err := join(ctx)
	if err != nil {
		return nil, err
	}
	j.refs = 1
	joined.j = j
	return j, nil
}

// releaseJob drops one reference; the last removes the collectives' entry and
// finalizes the NI. The library itself stays initialized: the launcher admits a
// process to the job once, so a later Open joins the same job again on a new NI.
func releaseJob(j *jobState) {
	joined.mu.Lock()
	defer joined.mu.Unlock()
	if j.refs--; j.refs > 0 {
		return
	}
	joined.j = nil
	j.free()
}

// join initializes Portals (once per process), the non-matching logical NI, and
// the collectives' entry. Called with joined.mu held.
func join(ctx context.Context) (_ *jobState, err error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if !joined.inited {
		if err := portals.Init(); err != nil {
			return nil, err
		}
		joined.inited = true
	}
	ni, err := portals.NIInit(portals.IfaceDefault, portals.NINoMatching|portals.NILogical, portals.PIDAny, nil)
	if err != nil {
		return nil, err
	}
	j := &jobState{ni: ni, pts: map[portals.PTIndex]bool{}}
	defer func() {
		if err != nil {
			j.free()
		}
	}()
	id, err := ni.ID()
	if err != nil {
		return nil, err
	}
	m, err := ni.Map()
	if err != nil {
		return nil, err
	}
	j.rank, j.size = int(id.Rank), len(m)
	if j.acks, err = ni.EQAlloc(2*j.size + 8); err != nil {
		return nil, err
	}
	// Parity 0 is linked before parity 1, which the first collective uses: a peer
	// that took a put there has both linked.
	for p := range 2 {
		if j.ct[p], err = ni.CTAlloc(); err != nil {
			return nil, err
		}
		pt, err := ni.PTAlloc(0, nil, ctlPT+portals.PTIndex(p))
		if err != nil {
			return nil, err
		}
		j.slots[p] = make([]byte, 8*j.size)
		if j.le[p], err = pt.AppendLE(portals.LESpec{Start: j.slots[p], CT: j.ct[p], UID: portals.UIDAny,
			Options: portals.MEOpPut | portals.MEEventCTComm}, portals.PriorityList, 0); err != nil {
			return nil, err
		}
	}
	j.out = make([]byte, 8)
	if j.outMD, err = ni.MDBind(portals.MDSpec{Start: j.out, EQ: j.acks}); err != nil {
		return nil, err
	}
	return j, nil
}

// free releases what join made (nil parts are skipped), then the NI.
func (j *jobState) free() {
	for p := range 2 {
		if j.le[p] != nil {
			j.le[p].Unlink()
		}
		if pt, ok := j.ni.PT(ctlPT + portals.PTIndex(p)); ok {
			pt.Free()
		}
		if j.ct[p] != nil {
			j.ct[p].Free()
		}
	}
	if j.outMD != nil {
		j.outMD.Release()
	}
	if j.acks != nil {
		j.acks.Free()
	}
	j.ni.Fini()
}

// allgather is collective: every rank contributes v and gets every rank's value,
// by rank. When it returns on any rank, every rank has entered it, so whatever a
// rank did before calling it (linking a window's entry) is done everywhere.
func (j *jobState) allgather(ctx context.Context, v uint64) ([]uint64, error) {
	j.coll.Lock()
	defer j.coll.Unlock()
	if j.broken != nil {
		return nil, j.broken
	}
	// Collectives alternate between the two slot arrays, each with its own
	// counter. A peer can be at most one collective ahead of this rank: it cannot
	// finish the next one without this rank's value, sent only after this one is
	// done. So while this rank waits for collective e, the only puts that reach
	// array e%2 are those of e itself (no peer can be at e+2), and no peer
	// overwrites a value of e before this rank has read it.
	p := int(j.epoch+1) % 2
	binary.LittleEndian.PutUint64(j.out, v)
	binary.LittleEndian.PutUint64(j.slots[p][8*j.rank:], v)
	peers := make([]int, 0, j.size-1)
	for r := 0; r < j.size; r++ {
		if r != j.rank {
			peers = append(peers, r)
		}
	}
	if err := j.send(ctx, peers, ctlPT+portals.PTIndex(p), uint64(8*j.rank)); err != nil {
		// Events of this round may still arrive: the collectives cannot be trusted
		// any more.
		j.broken = err
		return nil, err
	}
	want := (j.rounds[p] + 1) * uint64(j.size-1)
	if _, err := waitCount(ctx, j.ct[p], want, func(v portals.CTEvent) bool { return v.Success >= want }); err != nil {
		j.broken = err
		return nil, err
	}
	j.rounds[p]++
	j.epoch++
	vals := make([]uint64, j.size)
	for r := range vals {
		vals[r] = binary.LittleEndian.Uint64(j.slots[p][8*r:])
	}
	return vals, nil
}

// send puts out at offset off of entry pt of every peer and waits until out may
// be reused.
//
// The job's first collective asks for acknowledgments: a peer that has not linked
// its slots yet (it is still joining) drops the put, which is sent again until
// the peer takes it. Once every peer has taken one, the slots stay linked until
// the peer leaves, which it does only after the last collective; later
// collectives need no acknowledgment, and so no answer from a peer that may be
// leaving.
func (j *jobState) send(ctx context.Context, peers []int, pt portals.PTIndex, off uint64) error {
	ack := portals.NoAckReq
	if j.epoch == 0 {
		ack = portals.AckReqFull
	}
	for wait := 20 * time.Microsecond; len(peers) > 0; wait = min(2*wait, 5*time.Millisecond) {
		for _, r := range peers {
			to := portals.Target{ID: portals.ProcessID{Rank: portals.Rank(r)}, PT: pt, Offset: off}
			if err := j.outMD.All().Put(to, portals.OpOptions{Ack: ack, Cookie: uint64(r)}); err != nil {
				return err
			}
		}
		perPeer := 1 // EventSend
		if ack == portals.AckReqFull {
			perPeer = 2 // and EventAck
		}
		var again []int
		for want := len(peers) * perPeer; want > 0; want-- {
			ev, err := j.acks.Wait(ctx)
			if err != nil {
				return err
			}
			switch {
			case ev.NIFail == portals.NIOK:
			case ev.Type == portals.EventAck && ev.NIFail == portals.NIDropped:
				again = append(again, int(ev.UserPtr))
			default:
				return fmt.Errorf("rank %d: %w", ev.UserPtr, &RemoteError{Fail: ev.NIFail, Count: 1})
			}
		}
		if peers = again; len(peers) > 0 {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			case <-t.C:
			}
		}
	}
	return nil
}

// barrier is collective: it returns once every rank has called it.
func (j *jobState) barrier(ctx context.Context) error {
	_, err := j.allgather(ctx, 0)
	return err
}

// takePT reserves the lowest free window index. Windows are opened in the same
// order on every rank, so every rank picks the same index for the same window.
func (j *jobState) takePT() (portals.PTIndex, error) {
	joined.mu.Lock()
	defer joined.mu.Unlock()
	for i := firstWindowPT; int(i) <= j.ni.Limits().MaxPTIndex; i++ {
		if !j.pts[i] {
			j.pts[i] = true
			return i, nil
		}
	}
	return 0, portals.PTFull
}

// givePT returns a window index.
func (j *jobState) givePT(i portals.PTIndex) {
	joined.mu.Lock()
	defer joined.mu.Unlock()
	delete(j.pts, i)
}
