//go:build linux && cgo && !noibverbs && ibvmock

package ibv

import "C"

// mockBuild reports whether the package links the software model of libibverbs
// (mock_ibverbs.c): built with the ibvmock tag, for tests on machines without an HCA.
const mockBuild = true
