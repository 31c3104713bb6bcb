// Package netnstest gives tests two "nodes" on one machine: two network
// namespaces joined by a veth pair, each with its own address, so processes in
// them are on different nodes for goportals (a node is a kernel and a network
// namespace) and really talk over TCP.
//
// It needs root (CAP_SYS_ADMIN and CAP_NET_ADMIN) and the ip tool; Setup skips the
// test with the reason otherwise.
package netnstest
