// Package verbstest is the conformance suite every verbs provider must pass, plus the
// benchmark helpers the providers share.
//
// A provider's test calls Run with an Env that opens two contexts whose queue pairs can
// connect to each other (two contexts of one process for loopback and, for soft, two
// contexts in one process as well; the multi-process tests live with the provider):
//
//	func TestConformance(t *testing.T) {
//		verbstest.Run(t, verbstest.Env{Name: "loopback", Open: openTwo})
//	}
//
// The suite checks SEND/RECV, RDMA WRITE and READ at 8 B, 4 KiB, 1 MiB and 16 MiB byte
// for byte (with multi-SGE lists), immediates, atomics, the remote and local error
// statuses (and that no target byte changes), RNR waiting, unsignaled requests, ordering,
// flushing, a closed peer, the provider's synchronous limits and that Poll allocates
// nothing. Every blocking wait is bounded by Env.Timeout so a broken provider fails
// instead of hanging. Features a provider lacks (atomics, inline data) and registrations
// refused for RLIMIT_MEMLOCK are skipped with the reason.
//
// The package imports only internal/verbs and the standard library; it is meant for
// _test.go files and must never be imported by production code.
package verbstest
