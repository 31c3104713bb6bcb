package nic

import (
	"testing"

	"github.com/goportals/goportals/internal/envknob"
)

// TestOverTCP runs the multi-process put/get/atomic test and the dead-peer test
// with the soft provider's TCP path forced between the ranks (PTL_SOFT_PATH=tcp):
// the engine's semantics, and NI_UNDELIVERABLE when a peer dies, do not depend on
// the path.
func TestOverTCP(t *testing.T) {
	t.Setenv(string(envknob.SoftPath), "tcp")
	t.Run("PutGetAtomic", TestMultiProcessPutGetAtomic)
	t.Run("DeadPeer", TestDeadPeer)
}
