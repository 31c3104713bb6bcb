package nic

import (
	"net"
	"sync"

	"github.com/goportals/goportals/internal/bootstrap"
)

// The nid of a node. A node is a kernel and a network namespace: the nid is the
// node's IPv4 address (bootstrap.NodeAddr: PTL_NODE_ADDR, or the first IPv4
// address of PTL_IFACE, or of the first interface up and not a loopback,
// link-local addresses and container bridges last), as a number, most significant
// byte first, as the reference derives it; 127.0.0.1's value when there is none. NIDAny (0xffff) is a wildcard and never a nid: an address
// with that value is replaced by 127.0.0.1's.

// loopbackNID is the nid of 127.0.0.1.
const loopbackNID = NID(0x7f000001)

var nidOnce struct {
	sync.Once
	nid NID
}

// nodeNID returns this node's nid, computed once.
func nodeNID() NID {
	nidOnce.Do(func() { nidOnce.nid = nidFromInterfaces() })
	return nidOnce.nid
}

// nidFromInterfaces is the nid of this node's address (bootstrap.NodeAddr).
func nidFromInterfaces() NID { return nidOf(bootstrap.NodeAddr()) }

// nidOf is the nid of an IPv4 address.
func nidOf(v4 net.IP) NID {
	n := NID(uint32(v4[0])<<24 | uint32(v4[1])<<16 | uint32(v4[2])<<8 | uint32(v4[3]))
	if n == NIDAny {
		return loopbackNID
	}
	return n
}
