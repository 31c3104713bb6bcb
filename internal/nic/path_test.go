package nic

import "testing"

// TestPathSkipsSelf: the connection an NI opens to itself (NIInit does so at
// once) is not a path to a peer, so an NI connected to nobody else names no path,
// and one connected to a peer names that peer's path alone.
func TestPathSkipsSelf(t *testing.T) {
	nis := newNIs(t, 2, NIMatching|NIPhysical)
	a, b := nis[0], nis[1]
	if peerByID(a, mustPhysID(t, a)) == nil {
		t.Skip("the NI did not open its connection to itself at NIInit (nothing to skip)")
	}
	if got := a.Path(); got != "" {
		t.Fatalf("Path with only the connection to itself = %q, want \"\"", got)
	}
	mustPeer(t, a, b)
	got := a.Path()
	if got == "" || got != peerPath(t, a, mustPhysID(t, b)) {
		t.Fatalf("Path with one peer = %q, want that peer's path %q", got, peerPath(t, a, mustPhysID(t, b)))
	}
}

// peerPath is the path of the NI's connection to id.
func peerPath(t *testing.T, ni *NI, id ProcessID) string {
	t.Helper()
	pr := peerByID(ni, id)
	if pr == nil || pr.qp == nil {
		t.Fatalf("no connection to %v", id)
	}
	if q, ok := pr.qp.(pather); ok {
		return q.Path()
	}
	return ni.proc.dev.Name()
}
