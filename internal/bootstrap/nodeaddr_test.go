package bootstrap

import (
	"errors"
	"net"
	"testing"
)

func ifc(name string, flags net.Flags, addrs ...string) nodeIface {
	n := nodeIface{name: name, flags: flags}
	for _, a := range addrs {
		n.addrs = append(n.addrs, net.ParseIP(a))
	}
	return n
}

const up = net.FlagUp

// TestChooseNodeAddr: the node's address skips loopback, down interfaces,
// link-local addresses and container bridges (docker0, br-*, virbr*) unless
// nothing else is left; PTL_IFACE names the interface, PTL_NODE_ADDR the address.
func TestChooseNodeAddr(t *testing.T) {
	multi := []nodeIface{
		ifc("lo", up|net.FlagLoopback, "127.0.0.1"),
		ifc("docker0", up, "172.17.0.1"),
		ifc("br-3f2a9c", up, "172.18.0.1"),
		ifc("eth9", 0, "10.9.9.9"), // down
		ifc("eth0", up, "fe80::1", "169.254.3.4", "10.1.2.3"),
		ifc("ib0", up, "192.168.7.3"),
	}
	for _, c := range []struct {
		name        string
		ifs         []nodeIface
		iface, addr string
		want        string
	}{
		{"multi-homed with bridges first", multi, "", "", "10.1.2.3"},
		{"interface named", multi, "ib0", "", "192.168.7.3"},
		{"address named", multi, "", "192.168.7.3", "192.168.7.3"},
		{"only a bridge", []nodeIface{ifc("lo", up|net.FlagLoopback, "127.0.0.1"), ifc("docker0", up, "172.17.0.1")}, "", "", "172.17.0.1"},
		{"only link-local", []nodeIface{ifc("eth0", up, "169.254.3.4")}, "", "", "169.254.3.4"},
		{"nothing", []nodeIface{ifc("lo", up|net.FlagLoopback, "127.0.0.1")}, "", "", "127.0.0.1"},
	} {
		got, err := chooseNodeAddr(c.ifs, c.iface, c.addr)
		if err != nil || !got.Equal(net.ParseIP(c.want)) {
			t.Errorf("%s: %v, %v; want %s", c.name, got, err, c.want)
		}
	}
	for _, c := range []struct{ name, iface, addr string }{
		{"unknown interface", "eth7", ""},
		{"interface down", "eth9", ""},
		{"interface without IPv4", "lo6", ""},
		{"not an address", "", "node-a"},
		{"IPv6 address", "", "fe80::1"},
		{"not this node's address", "", "10.200.0.1"},
		{"both set", "eth0", "10.1.2.3"},
	} {
		ifs := append(multi, ifc("lo6", up, "::2"))
		if _, err := chooseNodeAddr(ifs, c.iface, c.addr); !errors.Is(err, ErrBadEnv) {
			t.Errorf("%s: %v, want ErrBadEnv", c.name, err)
		}
	}
}

// TestNodeAddrFollowsTheKnobs: NodeAddr and ResolveNodeAddr read PTL_NODE_ADDR
// and PTL_IFACE; a bad value is an error of ResolveNodeAddr.
func TestNodeAddrFollowsTheKnobs(t *testing.T) {
	t.Setenv(EnvNodeAddr, "127.0.0.1")
	if ip, err := ResolveNodeAddr(); err != nil || !ip.Equal(net.IPv4(127, 0, 0, 1)) {
		t.Fatalf("PTL_NODE_ADDR=127.0.0.1: %v, %v", ip, err)
	}
	if ip := NodeAddr(); !ip.Equal(net.IPv4(127, 0, 0, 1)) {
		t.Fatalf("NodeAddr with PTL_NODE_ADDR=127.0.0.1: %v", ip)
	}
	t.Setenv(EnvNodeAddr, "")
	t.Setenv(EnvIface, "no-such-interface0")
	if _, err := ResolveNodeAddr(); !errors.Is(err, ErrBadEnv) {
		t.Fatalf("PTL_IFACE naming no interface: %v, want ErrBadEnv", err)
	}
}
