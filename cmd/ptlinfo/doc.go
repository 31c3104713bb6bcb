// Command ptlinfo reports what goportals would use on this machine, like fi_info
// or ucx_info:
//
//	ptlinfo [-json]
//
// It prints the verbs providers linked in and whether each can run here, the
// provider PTL_PROVIDER selects and why, the RDMA devices (ports, state, link layer,
// netdevs, GIDs) as sysfs shows them, the limits of a network interface opened on
// the selected provider and the engine's eager threshold, the memory notifier in use
// and what it guarantees, the pin-cache knobs, every PTL_* environment variable the
// library reads with its current value (unknown PTL_* variables are flagged), the
// RLIMIT_MEMLOCK headroom and whether cross-memory attach (process_vm_readv) to
// another process is permitted (Yama ptrace_scope, and whether PR_SET_PTRACER
// helps). -json prints the same report as one JSON object.
//
// The exit status is 0 when the report was made (a part that could not be probed is
// reported with its reason), 2 for a usage error.
package main
