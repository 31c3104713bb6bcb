// Package rdmadev finds the machine's RDMA devices, their ports and the network
// devices behind them, through github.com/Mellanox/rdmamap and the sysfs files
// rdmamap reads (/sys/class/infiniband and its neighbours).
//
// rdmamap answers nil both when the kernel has no RDMA class at all and when a
// directory cannot be read; List turns those into typed results: no RDMA in the
// kernel is ErrNoRDMA (matching verbs.ErrNotSupported), an empty class is zero
// devices and no error, an unreadable or malformed file is an *verbs.OpError matching
// verbs.ErrInvalidArgument that names the file.
//
// The package reads files only; it never opens a device (the ibv provider does that).
// It imports internal/verbs for the error vocabulary and must never import the
// providers or anything above them.
package rdmadev
