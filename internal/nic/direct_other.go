//go:build !linux

package nic

import (
	"runtime"
	"sync/atomic"

	"github.com/goportals/goportals/internal/verbs"
)

// Off Linux there is no memfd to share: NIs have no direct table and every
// operation goes through the target's engine.

func mapDirectTable(size int) ([]byte, int, uint64, error) {
	return nil, -1, 0, verbs.ErrNotSupported
}

func unmapDirectTable(tab []byte, fd int) {}

func osPID() int { return 0 }

// remoteTable is never opened off Linux.
type remoteTable struct {
	tab  []byte
	nwin int
	dead atomic.Bool
}

func (r *remoteTable) exited() bool { return false }

func processGone(pid int) bool { return false }

func openRemoteTable(h directHello) *remoteTable { return nil }

func (r *remoteTable) win(i int) []byte { return nil }

func (r *remoteTable) snapshot(win []byte, old *winSnap) *winSnap { return nil }

func (r *remoteTable) release() {}

func directWake(tab []byte) {}

func directWait(tab []byte, v uint32) {}

func directPause(i int) { runtime.Gosched() }
