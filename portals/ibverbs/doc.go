// Package ibverbs links the libibverbs provider into a program, so its network
// interfaces can run on RDMA hardware (InfiniBand, RoCE) through rdma-core:
//
//	import _ "github.com/goportals/goportals/portals/ibverbs"
//
// With it linked, PTL_PROVIDER=auto (the default) takes the first device with an
// active port and falls back to the soft provider elsewhere; PTL_PROVIDER=ibv
// insists on it. Building needs cgo and rdma-core's headers and library (Debian:
// libibverbs-dev); without them, or with the noibverbs build tag, the provider
// reports ErrNotSupported and auto keeps the soft provider. Programs that do not
// import this package never need rdma-core.
package ibverbs

import _ "github.com/goportals/goportals/internal/verbs/ibv" // registers the provider
