package soft

import (
	"errors"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/goportals/goportals/internal/verbs"
	"github.com/goportals/goportals/internal/verbs/verbstest"
)

// linkCC returns the congestion control of l's socket.
func linkCC(t *testing.T, l *tcpLink) string {
	t.Helper()
	l.rxMu.Lock()
	defer l.rxMu.Unlock()
	cc, err := unix.GetsockoptString(l.fd, unix.IPPROTO_TCP, unix.TCP_CONGESTION)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimRight(cc, "\x00")
}

// The links run reno unless PTL_SOFT_TCP_CC says otherwise: both ends' sockets
// (congestion control is the sender's), whatever the kernel's default.
func TestTCPLinkCongestionControlDefaultsToReno(t *testing.T) {
	t.Setenv(EnvPath, "tcp")
	p := verbstest.NewPair(t, softEnv)
	la, lb := tcpPingPong(t, p, 1)
	for _, l := range []*tcpLink{la, lb} {
		if got := linkCC(t, l); got != "reno" {
			t.Errorf("congestion control %q, want reno", got)
		}
	}
}

// PTL_SOFT_TCP_CC=system keeps the kernel's default.
func TestTCPLinkCongestionControlSystem(t *testing.T) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/tcp_congestion_control")
	if err != nil {
		t.Skipf("the kernel's default is not readable: %v", err)
	}
	want := strings.TrimSpace(string(b))
	if want == defaultTCPCC {
		t.Skipf("the kernel's default is %s, the links' own: the test cannot tell them apart here", want)
	}
	t.Setenv(EnvPath, "tcp")
	t.Setenv(EnvTCPCC, "system")
	p := verbstest.NewPair(t, softEnv)
	la, lb := tcpPingPong(t, p, 1)
	for _, l := range []*tcpLink{la, lb} {
		if got := linkCC(t, l); got != want {
			t.Errorf("congestion control %q, want the kernel's %q", got, want)
		}
	}
}

// A congestion control the kernel does not have (or does not allow this user)
// fails Connect with a clear error, before any link exists.
func TestTCPLinkCongestionControlRefused(t *testing.T) {
	t.Setenv(EnvPath, "tcp")
	t.Setenv(EnvTCPCC, "no-such-cc")
	p := verbstest.NewPairOpts(t, softEnv, verbstest.PairOptions{NoConnect: true})
	err := p.A.QP.Connect(p.B.QP.Address())
	if err == nil {
		t.Fatal("Connect accepted an unknown congestion control")
	}
	if !errors.Is(err, verbs.ErrInvalidArgument) || !strings.Contains(err.Error(), EnvTCPCC) || !strings.Contains(err.Error(), "no-such-cc") {
		t.Fatalf("Connect: %v; want ErrInvalidArgument naming %s and the value", err, EnvTCPCC)
	}
	if p.A.QP.(*qp).link != nil {
		t.Fatal("a link was made")
	}
}
