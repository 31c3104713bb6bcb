//go:build !linux || !cgo || noibverbs

package ibv

import (
	"errors"

	"github.com/goportals/goportals/internal/verbs"
)

var errNotBuilt = errors.New("this program was built without libibverbs (needs linux, cgo and the rdma-core headers; the noibverbs tag leaves it out)")

// mockBuild is false: no libibverbs, real or modelled, is linked.
const mockBuild = false

var errLibSeesNone = errors.New("libibverbs lists no device")

// Linked reports whether this build links libibverbs: here it does not, so the error
// matches verbs.ErrNotSupported.
func Linked() error { return verbs.Errorf("ibv", verbs.ErrNotSupported, errNotBuilt) }

func devices() ([]verbs.Device, error) { return nil, nil }

func open(string) (verbs.Context, error) {
	return nil, verbs.Errorf("ibv: open", verbs.ErrNotSupported, errNotBuilt)
}
