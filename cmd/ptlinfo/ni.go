package main

// Everything ptlinfo takes from the portals engine lives in this file.

import (
	"context"
	"fmt"
	"sync"

	portals "github.com/goportals/goportals/internal/nic"
	"github.com/goportals/goportals/internal/verbs"
)

// NIInfo is the network interface part of the report.
type NIInfo struct {
	// Provider and Device are what the NI was opened on.
	Provider string `json:"provider"`
	Device   string `json:"device"`
	// Limits are the limits NIInit grants when asked for the largest values.
	Limits *portals.Limits `json:"limits,omitempty"`
	// Features names the Limits.Features bits.
	Features []string `json:"features,omitempty"`
	// EagerThreshold is the largest payload carried inline in the engine's messages;
	// larger ones move by RDMA READ/WRITE, copied once.
	EagerThreshold uint64 `json:"eager_threshold"`
	// Error says why no NI could be opened.
	Error string `json:"error,omitempty"`
}

// loneRuntime is the runtime of a one-rank job: a process on its own.
type loneRuntime struct {
	mu sync.Mutex
	kv map[string][]byte
}

func (r *loneRuntime) Rank() int { return 0 }
func (r *loneRuntime) Size() int { return 1 }
func (r *loneRuntime) Put(key string, value []byte) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.kv == nil {
		r.kv = map[string][]byte{}
	}
	r.kv[key] = append([]byte(nil), value...)
	return nil
}
func (r *loneRuntime) Fence(context.Context) error { return nil }
func (r *loneRuntime) Get(_ context.Context, rank int, key string) ([]byte, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	v, ok := r.kv[key]
	if rank != 0 || !ok {
		return nil, fmt.Errorf("no key %q for rank %d", key, rank)
	}
	return v, nil
}

// niInfo opens a matching, physically addressed NI of a lone process on dev (nil:
// the engine's default device) and reports its limits.
func niInfo(provider string, dev verbs.Device) NIInfo {
	info := NIInfo{Provider: provider}
	if dev != nil {
		info.Device = dev.Name()
	}
	p, err := portals.NewProcess(&loneRuntime{}, dev)
	if err != nil {
		info.Error = err.Error()
		return info
	}
	defer p.Close()
	ni, err := p.NIInit(portals.IfaceDefault, portals.NIMatching|portals.NIPhysical, portals.PIDAny, nil)
	if err != nil {
		info.Error = err.Error()
		return info
	}
	defer ni.Fini()
	lim := ni.Limits()
	info.Limits = &lim
	for _, f := range []struct {
		bit  uint32
		name string
	}{{portals.FeatureTargetBindInaccessible, "PTL_TARGET_BIND_INACCESSIBLE"},
		{portals.FeatureTotalDataOrdering, "PTL_TOTAL_DATA_ORDERING"},
		{portals.FeatureCoherentAtomics, "PTL_COHERENT_ATOMICS"}} {
		if lim.Features&f.bit != 0 {
			info.Features = append(info.Features, f.name)
		}
	}
	// The engine grants max_volatile_size equal to its inline payload limit.
	info.EagerThreshold = lim.MaxVolatileSize
	return info
}
