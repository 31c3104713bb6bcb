// Package ibv is the verbs provider for real HCAs: cgo over rdma-core's libibverbs
// (Debian libibverbs-dev), linked at build time.
//
// It implements the internal/verbs interfaces with reliable-connected queue pairs:
// SEND/RECV, RDMA WRITE (with immediate) and READ, 64-bit fetch-and-add and
// compare-and-swap when the device has atomics, inline sends up to the device's cap,
// and on-demand paging registrations when the device advertises ODP for RC (then a
// registration pins nothing and needs no cache). A batch of work requests is built
// into an ibv_send_wr chain in C and posted with one cgo call; completions are polled
// in batches the same way, and CQ.Wait sleeps on a completion channel watched by Go's
// poller. Connection addresses carry LID, GID (RoCE picks a RoCE v2 GID, IPv4-mapped
// first), QPN, PSN and MTU, exchanged out of band like every provider's.
//
// The cgo part builds with the tag set `linux && cgo` (and without `noibverbs`,
// the tag to build without the rdma-core headers); elsewhere the provider registers,
// lists no device and reports verbs.ErrNotSupported. A kernel without RDMA makes
// ibv_get_device_list fail with ENOSYS: that is zero devices, not an error. Devices
// and ports are described (for Probe and ptlinfo) through internal/rdmadev.
//
// The conformance suite (internal/verbs/verbstest) runs on the first active port of
// a machine with an HCA. Built with the ibvmock tag, the package links a software
// model of the libibverbs calls it makes (mock_ibverbs.c: one device, RC semantics
// in one process, errors, flushes, RNR waiting, completion channels) instead of
// rdma-core; TestConformanceOnModel runs the suite that way so the provider's code
// is exercised on machines without RDMA.
//
// The package imports internal/verbs and internal/rdmadev only and must never import
// the engine or the packages above it.
package ibv
