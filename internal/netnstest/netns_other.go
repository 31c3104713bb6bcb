//go:build !linux

package netnstest

import "testing"

// Pair is two network namespaces joined by a veth pair (Linux only).
type Pair struct {
	Names [2]string
	Addrs [2]string
}

// Setup skips: network namespaces are a Linux feature.
func Setup(t testing.TB) *Pair {
	t.Skip("netnstest: network namespaces exist on Linux only")
	return nil
}

// Wrap returns argv unchanged.
func (p *Pair) Wrap(i int, argv ...string) []string { return argv }

// WrapByRank returns argv unchanged.
func (p *Pair) WrapByRank(argv ...string) []string { return argv }

// Host is one network namespace joined to the test's own (Linux only).
type Host struct {
	Name, Addr, HostAddr string
}

// SetupHost skips: network namespaces are a Linux feature.
func SetupHost(t testing.TB) *Host {
	t.Skip("netnstest: network namespaces exist on Linux only")
	return nil
}

// Wrap returns argv unchanged.
func (h *Host) Wrap(argv ...string) []string { return argv }
