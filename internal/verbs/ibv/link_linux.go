//go:build linux && cgo && !noibverbs && !ibvmock

package ibv

// The provider links rdma-core's libibverbs (the ibvmock tag links the software
// model in mock_ibverbs.c instead).

// #cgo LDFLAGS: -libverbs
import "C"

// mockBuild reports whether the package links the software model of libibverbs.
const mockBuild = false
