package nic

import (
	"maps"
	"slices"
	"strings"
)

// pather is a queue pair that says how it reaches its peer (the soft provider's:
// "shm" or "tcp").
type pather interface{ Path() string }

// Path says which path carries the NI's traffic to its connected peers: "shm",
// "tcp", both joined by "+" when peers differ, the provider's name when its queue
// pairs do not say, or "" with no connected peer. The NI's connection to itself
// (opened by NIInit) carries no traffic to a peer and is left out.
func (ni *NI) Path() string {
	seen := map[string]bool{}
	self := keyOf(ni.physID())
	for _, pr := range ni.peerList() {
		if pr == nil || pr.qp == nil || keyOf(pr.id) == self {
			continue
		}
		p := ni.proc.dev.Name()
		if q, ok := pr.qp.(pather); ok {
			if p = q.Path(); p == "" {
				continue
			}
		}
		seen[p] = true
	}
	return strings.Join(slices.Sorted(maps.Keys(seen)), "+")
}
