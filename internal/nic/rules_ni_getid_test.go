package nic

import (
	"context"
	"testing"
	"time"

	"github.com/goportals/goportals/eq"
)

// Rule 19: on a logical NI, GetId answers the caller's index in the map SetMap set
// (the reference looks its nid/pid up in the new map); a map that does not hold the
// caller is refused with ARG_INVALID, and the map in force stays.

// rulesPhysIDs returns the physical ids of nis, in order.
func rulesPhysIDs(t *testing.T, nis []*NI) []ProcessID {
	t.Helper()
	ids := make([]ProcessID, len(nis))
	for r, ni := range nis {
		id, err := ni.PhysID()
		if err != nil {
			t.Fatal(err)
		}
		ids[r] = id
	}
	return ids
}

func TestRulesNIGetIdFollowsSetMap(t *testing.T) {
	nis, _ := rulesJob(t, 2, NIMatching|NILogical, PIDAny, nil)
	phys := rulesPhysIDs(t, nis)
	// Reversed: job rank 0 is logical rank 1 and the other way round.
	m := []ProcessID{phys[1], phys[0]}
	for r, ni := range nis {
		if err := ni.SetMap(m); err != nil {
			t.Fatalf("rank %d: SetMap: %v", r, err)
		}
	}
	for r, ni := range nis {
		id, err := ni.ID()
		if err != nil || id.Rank != Rank(1-r) {
			t.Errorf("job rank %d: GetId %+v, %v; want logical rank %d", r, id, err, 1-r)
		}
	}

	// The map addresses targets and names initiators: job rank 0 puts to logical
	// rank 0 (job rank 1), whose event names the initiator as logical rank 1.
	tgt, ini := nis[1], nis[0]
	q := mustEQn(t, tgt, 8)
	pt, err := tgt.PTAlloc(0, q, PTAny)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tgt.MEAppend(pt, MESpec{Start: make([]byte, 8), UID: UIDAny, Options: MEOpPut | MEEventLinkDisable,
		MatchID: ProcessID{Rank: 1}}, PriorityList, 0); err != nil {
		t.Fatal(err)
	}
	m0 := mustMD(t, ini, MDSpec{Start: make([]byte, 8)})
	if err := Put(m0, 0, 8, NoAckReq, ProcessID{Rank: 0}, pt, 0, 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ev, err := q.Wait(ctx)
	if err != nil || ev.Type != eq.EventPut || ev.Initiator.Rank != 1 {
		t.Errorf("target event %v from %+v, %v; want a PUT from logical rank 1", ev.Type, ev.Initiator, err)
	}
}

func TestRulesNISetMapWithoutCallerRefused(t *testing.T) {
	nis, _ := rulesJob(t, 2, NIMatching|NILogical, PIDAny, nil)
	phys := rulesPhysIDs(t, nis)
	before, err := nis[0].Map()
	if err != nil || len(before) != 2 {
		t.Fatalf("Map: %+v, %v; want two entries", before, err)
	}
	err = nis[0].SetMap([]ProcessID{phys[1]})
	wantErrno(t, "SetMap without the caller", err, ArgInvalid)
	after, err := nis[0].Map()
	if err != nil {
		t.Fatalf("Map after a refused SetMap: %v", err)
	}
	if len(after) != len(before) || after[0] != before[0] || after[1] != before[1] {
		t.Errorf("a refused SetMap changed the map from %+v to %+v", before, after)
	}
	if id, err := nis[0].ID(); err != nil || id.Rank != 0 {
		t.Errorf("GetId after a refused SetMap: %+v, %v; want rank 0", id, err)
	}
	// A map holding the caller once, at any index, is accepted.
	if err := nis[0].SetMap([]ProcessID{phys[1], phys[1], phys[0]}); err != nil {
		t.Errorf("SetMap holding the caller at index 2: %v", err)
	} else if id, err := nis[0].ID(); err != nil || id.Rank != 2 {
		t.Errorf("GetId: rank %d, %v; want rank 2", id.Rank, err)
	}
}
