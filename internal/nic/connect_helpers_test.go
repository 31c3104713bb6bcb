package nic

import "testing"

// mustPeer opens (or finds) from's connection to to and returns it.
func mustPeer(t testing.TB, from, to *NI) *peer {
	t.Helper()
	id := to.physID()
	from.mu.Lock()
	pr := from.lookupPeer(id)
	from.mu.Unlock()
	if pr == nil {
		pr = from.connectTo(id)
	}
	if pr.broken.Load() {
		t.Fatalf("connecting to %d:%d: %v", id.NID, id.PID, pr.why)
	}
	return pr
}

// peerByID returns the connection ni sends on to id, working or not (nil: none).
func peerByID(ni *NI, id ProcessID) *peer {
	ni.mu.Lock()
	defer ni.mu.Unlock()
	return ni.byPhys[keyOf(id)]
}
