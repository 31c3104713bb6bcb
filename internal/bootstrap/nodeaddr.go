package bootstrap

import (
	"net"
	"strings"

	"github.com/goportals/goportals/internal/envknob"
)

// The node's address names the node to the others: it is the nid of the engine,
// where the soft provider's TCP listener and ptlrun's server for -hosts listen.
// PTL_NODE_ADDR gives it, or PTL_IFACE the interface whose first IPv4 address it
// is. Otherwise it is the first IPv4 address of the first interface that is up
// and not a loopback, preferring addresses that are not link-local
// (169.254.0.0/16, never routed between nodes) on interfaces that are not
// container bridges (docker*, br-*, virbr*: the same addresses on every node
// that runs containers); 127.0.0.1 when there is none.

const (
	// EnvNodeAddr holds the IPv4 address that names this node.
	EnvNodeAddr = string(envknob.NodeAddr)
	// EnvIface names the interface whose address names this node.
	EnvIface = string(envknob.Iface)
)

// nodeIface is what the choice needs of one interface.
type nodeIface struct {
	name  string
	flags net.Flags
	addrs []net.IP
}

// bridgeLike reports whether an interface is a container bridge by its name.
func bridgeLike(name string) bool {
	for _, p := range []string{"docker", "br-", "virbr"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// chooseNodeAddr picks the node's address among ifs, following iface
// (PTL_IFACE) or addr (PTL_NODE_ADDR) when set; a bad value is ErrBadEnv.
func chooseNodeAddr(ifs []nodeIface, iface, addr string) (net.IP, error) {
	if iface != "" && addr != "" {
		return nil, errDetail(ErrBadEnv, "%s and %s are both set: set one", EnvIface, EnvNodeAddr)
	}
	if addr != "" {
		ip := net.ParseIP(addr).To4()
		if ip == nil {
			return nil, errDetail(ErrBadEnv, "%s=%q is not an IPv4 address", EnvNodeAddr, addr)
		}
		for _, fi := range ifs {
			for _, a := range fi.addrs {
				if a.Equal(ip) {
					return ip, nil
				}
			}
		}
		return nil, errDetail(ErrBadEnv, "%s=%s is not an address of this node", EnvNodeAddr, addr)
	}
	if iface != "" {
		for _, fi := range ifs {
			if fi.name != iface {
				continue
			}
			if fi.flags&net.FlagUp == 0 {
				return nil, errDetail(ErrBadEnv, "%s=%s: the interface is down", EnvIface, iface)
			}
			for _, a := range fi.addrs {
				if v4 := a.To4(); v4 != nil {
					return v4, nil
				}
			}
			return nil, errDetail(ErrBadEnv, "%s=%s: the interface has no IPv4 address", EnvIface, iface)
		}
		return nil, errDetail(ErrBadEnv, "%s=%s: no such interface", EnvIface, iface)
	}
	var second net.IP // the best address of the ones avoided
	for _, fi := range ifs {
		if fi.flags&net.FlagUp == 0 || fi.flags&net.FlagLoopback != 0 {
			continue
		}
		for _, a := range fi.addrs {
			v4 := a.To4()
			if v4 == nil || v4.IsLoopback() {
				continue
			}
			if v4.IsLinkLocalUnicast() || bridgeLike(fi.name) {
				if second == nil {
					second = v4
				}
				continue
			}
			return v4, nil
		}
	}
	if second != nil {
		return second, nil
	}
	return net.IPv4(127, 0, 0, 1).To4(), nil
}

// interfaces lists this node's interfaces and their addresses.
func interfaces() []nodeIface {
	ifs, err := net.Interfaces()
	if err != nil {
		return nil
	}
	out := make([]nodeIface, 0, len(ifs))
	for _, fi := range ifs {
		n := nodeIface{name: fi.Name, flags: fi.Flags}
		if addrs, err := fi.Addrs(); err == nil {
			for _, a := range addrs {
				if ipn, ok := a.(*net.IPNet); ok {
					n.addrs = append(n.addrs, ipn.IP)
				}
			}
		}
		out = append(out, n)
	}
	return out
}

// ResolveNodeAddr returns this node's address as peers on other nodes see it,
// following PTL_NODE_ADDR and PTL_IFACE; a value that names no address or
// interface of this node is an error (ErrBadEnv).
func ResolveNodeAddr() (net.IP, error) {
	ip, err := chooseNodeAddr(interfaces(), envknob.Get(envknob.Iface), envknob.Get(envknob.NodeAddr))
	if err != nil {
		return nil, opErr("node address", -1, "", err)
	}
	return ip, nil
}

// NodeAddr is this node's address as peers on other nodes see it
// (ResolveNodeAddr); when PTL_NODE_ADDR or PTL_IFACE is bad, the address chosen
// without them (ResolveNodeAddr reports the error).
func NodeAddr() net.IP {
	if ip, err := ResolveNodeAddr(); err == nil {
		return ip
	}
	ip, _ := chooseNodeAddr(interfaces(), "", "")
	return ip
}
