package nic

import "fmt"

// Identities and the logical map. An NI has a physical id, (nid, pid): the node's
// nid (nodeNID) and the pid its process claimed on the node. A logical NI also has
// a map from ranks to physical ids: SetMap sets it once (a second SetMap is
// IGNORED, as in the reference); a process made over a job Runtime starts its
// logical NIs with the job's map, which SetMap may still replace once. The NI's
// rank is the index of its physical id in the map.

// ID returns the NI's process id (PtlGetId): on a logical NI its rank, the index of
// its physical id in the map (RankAny while it has no map); NID and PID on a
// physical one.
func (ni *NI) ID() (ProcessID, error) {
	if err := ni.check("PtlGetId"); err != nil {
		return ProcessID{}, err
	}
	if ni.Logical() {
		ni.mu.Lock()
		defer ni.mu.Unlock()
		return ProcessID{Rank: ni.selfRank}, nil
	}
	return ProcessID{NID: ni.self.NID, PID: ni.self.PID}, nil
}

// PhysID returns the NI's physical id (PtlGetPhysId): the node's nid and the
// process's pid, on a logical NI as on a physical one. It is what peers exchange
// out of band to build the map of SetMap.
func (ni *NI) PhysID() (ProcessID, error) {
	if err := ni.check("PtlGetPhysId"); err != nil {
		return ProcessID{}, err
	}
	return ni.physID(), nil
}

// physID is PhysID for the engine: no handle check.
func (ni *NI) physID() ProcessID { return ProcessID{NID: ni.self.NID, PID: ni.self.PID} }

// SetMap sets the rank-to-physical-id map of a logical NI (PtlSetMap): rank r is
// m[r]. The map must hold the caller's physical id (its first index is the caller's
// rank); the ids in it need not exist yet, connections open on first use. It is
// ArgInvalid on a physical NI, for an empty map or one without the caller (the map
// in force stays), and Ignored (nothing changes) once SetMap has set a map. A map a
// job Runtime gave the NI at NIInit does not count: SetMap replaces it.
func (ni *NI) SetMap(m []ProcessID) error {
	const op = "PtlSetMap"
	if err := ni.check(op); err != nil {
		return err
	}
	if !ni.Logical() {
		return opErr(op, ArgInvalid, fmt.Errorf("physical NI"))
	}
	if len(m) == 0 {
		return opErr(op, ArgInvalid, fmt.Errorf("empty map"))
	}
	ni.mu.Lock()
	defer ni.mu.Unlock()
	if ni.mapSet {
		return opErr(op, Ignored, fmt.Errorf("the map is set already"))
	}
	// The caller's rank is its index in the map: a map without it gives it none,
	// which the reference refuses.
	if logicalIndex(m, ni.self) < 0 {
		return opErr(op, ArgInvalid, fmt.Errorf("the map does not hold this process (%d:%d)", ni.self.NID, ni.self.PID))
	}
	ni.setLogical(m)
	ni.mapSet = true
	return nil
}

// setLogical installs a copy of m as the logical map. Called with ni.mu held (or
// before the NI is published).
func (ni *NI) setLogical(m []ProcessID) {
	c := make([]ProcessID, len(m))
	for r, id := range m {
		c[r] = ProcessID{NID: id.NID, PID: id.PID, Rank: Rank(r)}
	}
	ni.logical.Store(&c)
	ni.mapGen++
	ni.selfRank = RankAny
	if r := logicalIndex(c, ni.self); r >= 0 {
		ni.selfRank = Rank(r)
	}
}

// Map returns the logical map (PtlGetMap): ArgInvalid on a physical NI, NoSpace
// while the NI has no map (as the reference answers).
func (ni *NI) Map() ([]ProcessID, error) {
	const op = "PtlGetMap"
	if err := ni.check(op); err != nil {
		return nil, err
	}
	if !ni.Logical() {
		return nil, opErr(op, ArgInvalid, fmt.Errorf("physical NI"))
	}
	ni.mu.Lock()
	defer ni.mu.Unlock()
	m := ni.logical.Load()
	if m == nil {
		return nil, opErr(op, NoSpace, fmt.Errorf("no map set"))
	}
	return append([]ProcessID(nil), *m...), nil
}

// peerOf resolves a target id to the physical id it names and the connection to
// it, nil when none is open yet. ok is false for a rank outside the logical map (or
// any rank while there is none). Called with ni.mu held.
func (ni *NI) peerOf(target ProcessID) (pr *peer, id ProcessID, ok bool) {
	if ni.Logical() {
		lp := ni.logical.Load()
		if lp == nil || int64(target.Rank) >= int64(len(*lp)) {
			return nil, ProcessID{}, false
		}
		id = (*lp)[target.Rank]
	} else {
		id = ProcessID{NID: target.NID, PID: target.PID}
	}
	return ni.lookupPeer(id), id, true
}

// idOfPeer names the process at the other end of pr: its physical id and its rank
// in the logical map (RankAny when the map does not hold it). Called with ni.mu
// held.
func (ni *NI) idOfPeer(pr *peer) ProcessID {
	id := pr.id
	if !ni.Logical() {
		return id
	}
	if pr.rankGen != ni.mapGen || pr.rankGen == 0 {
		pr.rank, pr.rankGen = RankAny, ni.mapGen
		if lp := ni.logical.Load(); lp != nil {
			if r := logicalIndex(*lp, id); r >= 0 {
				pr.rank = Rank(r)
			}
		}
	}
	id.Rank = pr.rank
	return id
}

// logicalIndex is the first index of the physical id of id in m, or -1.
func logicalIndex(m []ProcessID, id ProcessID) int {
	for r, p := range m {
		if p.NID == id.NID && p.PID == id.PID {
			return r
		}
	}
	return -1
}
