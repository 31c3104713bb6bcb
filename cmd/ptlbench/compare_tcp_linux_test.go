package main

import (
	"context"
	"net"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// connCC returns the congestion control of c's socket.
func connCC(t *testing.T, c net.Conn) string {
	t.Helper()
	rc, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var cc string
	var gerr error
	if err := rc.Control(func(fd uintptr) {
		cc, gerr = unix.GetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION)
	}); err != nil {
		t.Fatal(err)
	}
	if gerr != nil {
		t.Fatal(gerr)
	}
	return strings.TrimRight(cc, "\x00")
}

// The raw stream's sockets, both ends, run the soft provider's congestion
// control (reno unless PTL_SOFT_TCP_CC says otherwise), not the kernel's
// default: the baseline must differ from goportals' TCP path only by what is on
// top of the stream.
func TestTCPStreamRunsTheLinksCongestionControl(t *testing.T) {
	t.Setenv("PTL_SOFT_TCP_CC", "")
	lc := net.ListenConfig{Control: streamControl}
	ln, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	d := net.Dialer{Control: streamControl}
	c, err := d.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for side, conn := range map[string]net.Conn{"dialer": c, "sink": s} {
		if got := connCC(t, conn); got != "reno" {
			t.Errorf("%s's congestion control %q, want reno (the links')", side, got)
		}
	}
}
