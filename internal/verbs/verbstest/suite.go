package verbstest

import (
	"testing"
)

// sizes are the transfer sizes every data-moving test runs at.
var sizes = []struct {
	name string
	n    int
}{{"8B", 8}, {"4KiB", 4 << 10}, {"1MiB", 1 << 20}, {"16MiB", 16 << 20}}

// Run runs the conformance suite against env as subtests of t.
func Run(t *testing.T, env Env) {
	if env.Open == nil {
		t.Fatal("verbstest: Env.Open is nil")
	}
	tests := []struct {
		name string
		f    func(*testing.T, Env)
	}{
		{"SendRecv", testSendRecv},
		{"SendWithImm", testSendWithImm},
		{"SendInline", testSendInline},
		{"Write", testWrite},
		{"Read", testRead},
		{"WriteWithImm", testWriteWithImm},
		{"ReadFenceWrite", testFence},
		{"Atomics", testAtomics},
		{"AtomicMisaligned", testAtomicMisaligned},
		{"RemoteAccessErrors", testRemoteAccessErrors},
		{"LocalProtectionErrors", testLocalErrors},
		{"SendTooLong", testSendTooLong},
		{"RNRWaitThenDeliver", testRNR},
		{"Unsignaled", testUnsignaled},
		{"Ordering", testOrdering},
		{"FlushOnClose", testFlushOnClose},
		{"PeerClosedWithWorkOutstanding", testPeerClosedBusy},
		{"PeerClosedThenPost", testPeerClosedIdle},
		{"PollAllocatesNothing", testPollAllocs},
		{"SynchronousErrors", testSyncErrors},
		{"ObjectLifetimes", testLifetimes},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.f(t, env) })
	}
}
